import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Chat view: the conversation and the composer.
Item {
    id: page
    property QtObject controller
    readonly property bool ready: controller !== null && controller.loadState === "ready"
    readonly property bool busy: controller !== null && controller.generating
    signal stopRequested()

    function focusInput() { composer.focusInput() }

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        ChatView {
            id: chatView
            objectName: "chatView"
            Layout.fillWidth: true
            Layout.fillHeight: true
            controller: page.controller
        }

        Composer {
            id: composer
            objectName: "composer"
            Layout.fillWidth: true
            ready: page.ready
            busy: page.busy
            // A message too long for the context is refused by send() (the banner says why):
            // the text stays in the box to be shortened.
            onSendRequested: function(text) {
                if (page.controller.send(text))
                    composer.clear()
            }
            onStopRequested: page.stopRequested()
        }
    }
}
