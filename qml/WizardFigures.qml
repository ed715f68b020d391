import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// A small two-column table of figures on a surface card: `rows` is a list of [label, value]
// pairs (an empty value hides its row). A plain Column, not a GridLayout: the rows are rebuilt
// whenever the wizard's state changes, and Qt 6.4's layouts crashed here when a Repeater's
// delegates went away during a polish.
Rectangle {
    id: card
    property var rows: []
    property color accentBorder: Theme.border
    property int labelWidth: 150

    Layout.fillWidth: true
    implicitHeight: column.implicitHeight + 2 * Theme.padding
    radius: Theme.radius
    color: Theme.surface
    border.color: accentBorder

    Column {
        id: column
        anchors { left: parent.left; right: parent.right; top: parent.top; margins: Theme.padding }
        spacing: 6
        Repeater {
            model: card.rows.filter(r => r[1] !== undefined && r[1] !== "")
            delegate: Row {
                required property var modelData
                width: column.width
                spacing: Theme.padding
                Label {
                    width: card.labelWidth
                    text: parent.modelData[0]
                    color: Theme.textMuted
                    elide: Text.ElideRight
                }
                Label {
                    width: parent.width - card.labelWidth - Theme.padding
                    text: parent.modelData[1]
                    color: Theme.text
                    wrapMode: Text.Wrap
                }
            }
        }
    }
}
