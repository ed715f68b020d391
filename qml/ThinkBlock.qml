import QtQuick
import QtQuick.Controls
import Colibri

// The model's reasoning (<think>...</think>): "Thinking…" and shown while it is being written,
// collapsed to "Thought for N s" once the answer proper begins; a click toggles it.
Item {
    id: think
    objectName: "thinkBlock"
    property string text
    property bool open
    property double seconds: -1
    // Until the user toggles it, the block is expanded exactly while the reasoning streams.
    property bool userToggled: false
    property bool userExpanded: false
    readonly property bool expanded: userToggled ? userExpanded : open

    readonly property real naturalWidth: expanded ? Math.max(toggle.implicitWidth,
                                                             body.implicitWidth + 14)
                                                  : toggle.implicitWidth
    implicitHeight: toggle.implicitHeight + (expanded ? body.implicitHeight + 6 : 0)

    AbstractButton {
        id: toggle
        objectName: "thinkToggle"
        focusPolicy: Qt.NoFocus
        implicitWidth: label.implicitWidth + 4
        implicitHeight: label.implicitHeight + 4
        Accessible.name: label.text
        contentItem: Label {
            id: label
            text: (think.expanded ? "\u25BE " : "\u25B8 ")
                  + (think.open ? qsTr("Thinking…")
                     : think.seconds >= 0 ? qsTr("Thought for %1 s").arg(think.seconds.toFixed(1))
                     : qsTr("Thought"))
            color: Theme.textMuted
            font.family: Theme.fontFamily
            font.pixelSize: Theme.smallFontSize
            font.bold: true
        }
        onClicked: {
            think.userExpanded = !think.expanded
            think.userToggled = true
        }
    }

    Rectangle {
        visible: think.expanded
        anchors { top: toggle.bottom; topMargin: 6; bottom: parent.bottom; left: parent.left }
        width: 2
        color: Theme.border
    }
    TextEdit {
        id: body
        objectName: "thinkText"
        visible: think.expanded
        anchors { top: toggle.bottom; topMargin: 6; left: parent.left; right: parent.right; leftMargin: 12 }
        text: think.text
        textFormat: TextEdit.PlainText
        wrapMode: TextEdit.Wrap
        readOnly: true
        selectByMouse: true
        color: Theme.textMuted
        font.family: Theme.fontFamily
        font.pixelSize: Theme.smallFontSize + 1
    }
}
