import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Chat view: the saved chats (when the window is wide enough), the conversation, a notice
// when the chat was held with another model, and the composer.
Item {
    id: page
    property QtObject controller
    property QtObject sessions
    readonly property bool ready: controller !== null && controller.loadState === "ready"
    readonly property bool busy: controller !== null && controller.generating
    signal stopRequested()
    signal newChatRequested()
    property bool settingsOpen: false

    function focusInput() { composer.focusInput() }

    RowLayout {
        anchors.fill: parent
        spacing: 0

        SessionList {
            id: sessionList
            objectName: "sessionList"
            Layout.fillHeight: true
            // Room for the conversation first: the list goes when the window is narrow.
            visible: page.sessions !== null && page.width >= (page.settingsOpen ? 1040 : 620)
            sessions: page.sessions
            onNewChatRequested: page.newChatRequested()
            onOpened: page.focusInput()
        }

        ColumnLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            spacing: 0

            // The chat's title, how full its context is, and its own settings.
            RowLayout {
                objectName: "chatToolbar"
                Layout.fillWidth: true
                Layout.leftMargin: Theme.padding
                Layout.rightMargin: Theme.padding / 2
                Layout.topMargin: 4
                spacing: Theme.padding
                Label {
                    objectName: "chatTitle"
                    text: page.sessions ? page.sessions.currentTitle : ""
                    color: Theme.text
                    font.bold: true
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                    // Keeps a few words when the row is tight: the meter and the KV size shorten
                    // first. Every item of this row can shrink, so the row never makes the
                    // conversation wider than the window.
                    Layout.minimumWidth: Math.min(implicitWidth, 90)
                }
                ContextMeter {
                    controller: page.controller
                    Layout.fillWidth: true
                    Layout.maximumWidth: Math.ceil(implicitWidth) // whole pixels, as its text
                }
                // The chat's KV cache on disk: what lets its next answer skip the prompt.
                Label {
                    objectName: "chatKvSize"
                    visible: text !== ""
                    text: page.sessions ? page.sessions.currentKvText : ""
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                    Layout.preferredWidth: Math.ceil(implicitWidth)
                    Layout.maximumWidth: Math.ceil(implicitWidth)
                    HoverHandler { id: kvHover }
                    ToolTip.visible: kvHover.hovered
                    ToolTip.text: qsTr("Saved after every answer: after a restart this chat goes on without reading the conversation again.")
                }
                ToolButton {
                    objectName: "chatSettingsButton"
                    visible: page.sessions !== null
                    text: "☰"
                    checkable: true
                    checked: settingsPanel.visible
                    Accessible.name: qsTr("This chat's settings (system prompt, sampling)")
                    ToolTip.visible: hovered
                    ToolTip.text: qsTr("This chat's settings")
                    onClicked: page.settingsOpen = !page.settingsOpen
                }
            }

            ErrorBanner {
                objectName: "modelNotice"
                Layout.fillWidth: true
                Layout.margins: Theme.padding
                Layout.bottomMargin: 0
                kind: "info"
                message: page.sessions ? page.sessions.modelNotice : ""
                dismissible: false // stays while this chat is shown: it is a fact, not an event
            }
            // The topic probe (Atlas view) holds the engine: say so here, where an answer would
            // otherwise seem stuck, and offer to stop it.
            ErrorBanner {
                objectName: "probeNotice"
                Layout.fillWidth: true
                Layout.margins: Theme.padding
                Layout.bottomMargin: 0
                kind: "info"
                message: page.controller && page.controller.probeRunning
                         ? (page.controller.answerWaiting
                            ? qsTr("%1. Your answer starts when it finishes (Stop cancels both).")
                            : qsTr("%1. A message sent now waits for it."))
                           .arg(page.controller.probeStatus)
                         : ""
                dismissible: false // stays while the probe runs; the Atlas view and Stop cancel it
            }
            AppButton {
                objectName: "loadSessionModel"
                visible: page.sessions !== null && page.sessions.canLoadSessionModel
                text: qsTr("Load that model")
                Layout.leftMargin: Theme.padding
                Layout.topMargin: 6
                onClicked: page.sessions.loadSessionModel()
            }

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

        ChatSettingsPanel {
            id: settingsPanel
            objectName: "chatSettingsPanel"
            Layout.fillHeight: true
            visible: page.settingsOpen && page.sessions !== null
            sessions: page.sessions
            onCloseRequested: page.settingsOpen = false
        }
    }
}
