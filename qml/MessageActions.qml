import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The small actions under a message: Copy; for the last answer Regenerate and, when it stopped
// at the token limit or by Stop, Continue; for a user message Edit (edit and resend).
RowLayout {
    id: actions
    property bool isUser: false
    property bool isLast: false
    property bool canContinue: false
    property bool busy: false // an answer is being written: nothing that starts another
    signal copyRequested()
    signal regenerateRequested()
    signal continueRequested()
    signal editRequested()

    spacing: 2

    component ActionButton: ToolButton {
        font.pixelSize: Theme.smallFontSize
        padding: 4
        leftPadding: 8
        rightPadding: 8
        Accessible.name: text
        contentItem: Label {
            text: parent.text
            color: parent.enabled ? Theme.textMuted : Qt.rgba(Theme.textMuted.r, Theme.textMuted.g, Theme.textMuted.b, 0.5)
            font: parent.font
        }
        background: Rectangle {
            radius: 6
            color: parent.hovered ? Theme.accentSoft : "transparent"
            border.color: parent.visualFocus ? Theme.accent : "transparent"
        }
    }

    ActionButton {
        objectName: "copyMessage"
        text: copied.running ? qsTr("Copied") : qsTr("Copy")
        onClicked: { actions.copyRequested(); copied.restart() }
        Timer { id: copied; interval: 1500 }
    }
    ActionButton {
        objectName: "editMessage"
        visible: actions.isUser
        enabled: !actions.busy
        text: qsTr("Edit")
        onClicked: actions.editRequested()
    }
    ActionButton {
        objectName: "regenerateAnswer"
        visible: !actions.isUser && actions.isLast
        enabled: !actions.busy
        text: qsTr("Regenerate")
        onClicked: actions.regenerateRequested()
    }
    ActionButton {
        objectName: "continueAnswer"
        visible: !actions.isUser && actions.isLast && actions.canContinue
        enabled: !actions.busy
        text: qsTr("Continue")
        onClicked: actions.continueRequested()
    }
}
