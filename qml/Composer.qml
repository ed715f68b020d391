import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The message box: Enter sends, Shift+Enter adds a line. The button reads "Send", or "Stop"
// while an answer streams.
Rectangle {
    id: composer
    property bool ready: false // a model is loaded
    property bool busy: false  // an answer is streaming
    signal sendRequested(string text)
    signal stopRequested()

    function clear() { input.clear() }
    function focusInput() { input.forceActiveFocus() }
    function trySend() {
        if (composer.ready && !composer.busy && input.text.trim() !== "")
            composer.sendRequested(input.text)
    }

    implicitHeight: row.implicitHeight + 2 * Theme.padding
    color: Theme.surface
    Rectangle {
        anchors { left: parent.left; right: parent.right; top: parent.top }
        height: 1
        color: Theme.border
    }

    RowLayout {
        id: row
        anchors { top: parent.top; bottom: parent.bottom; horizontalCenter: parent.horizontalCenter
                  margins: Theme.padding }
        width: Math.min(parent.width, 900) - Theme.padding * 3 // the chat column's width
        spacing: Theme.padding

        ScrollView {
            Layout.fillWidth: true
            Layout.preferredHeight: Math.min(160, Math.max(44, input.implicitHeight))
            TextArea {
                id: input
                objectName: "composerInput"
                Accessible.name: qsTr("Message")
                placeholderText: composer.ready ? qsTr("Message (Enter to send, Shift+Enter for a new line)")
                                                : qsTr("Waiting for a model…")
                wrapMode: TextArea.Wrap
                font.family: Theme.fontFamily
                font.pixelSize: Theme.fontSize
                color: Theme.text
                placeholderTextColor: Theme.textMuted
                leftPadding: 10
                rightPadding: 10
                topPadding: 10
                bottomPadding: 10
                background: Rectangle {
                    radius: 8
                    color: Theme.background
                    border.color: input.activeFocus ? Theme.accent : Theme.border
                }
                // Tab moves to the next control (as everywhere in the window), not a tab character.
                Keys.onTabPressed: function(event) {
                    input.nextItemInFocusChain(true).forceActiveFocus(Qt.TabFocusReason)
                    event.accepted = true
                }
                Keys.onBacktabPressed: function(event) {
                    input.nextItemInFocusChain(false).forceActiveFocus(Qt.BacktabFocusReason)
                    event.accepted = true
                }
                Keys.onPressed: function(event) {
                    if ((event.key === Qt.Key_Return || event.key === Qt.Key_Enter)
                            && !(event.modifiers & Qt.ShiftModifier)) {
                        event.accepted = true
                        composer.trySend()
                    }
                }
            }
        }

        AppButton {
            objectName: "sendButton"
            Accessible.name: composer.busy ? qsTr("Stop the answer") : qsTr("Send the message")
            text: composer.busy ? qsTr("Stop") : qsTr("Send")
            enabled: composer.busy || (composer.ready && input.text.trim() !== "")
            primary: !composer.busy
            Layout.preferredWidth: 88
            Layout.preferredHeight: 40
            onClicked: composer.busy ? composer.stopRequested() : composer.trySend()
        }
    }
}
