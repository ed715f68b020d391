import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// A small two-column table of figures on a surface card: `rows` is a list of [label, value]
// pairs (an empty value hides its row).
Rectangle {
    id: card
    property var rows: []
    property color accentBorder: Theme.border

    Layout.fillWidth: true
    implicitHeight: grid.implicitHeight + 2 * Theme.padding
    radius: Theme.radius
    color: Theme.surface
    border.color: accentBorder

    GridLayout {
        id: grid
        anchors { fill: parent; margins: Theme.padding }
        columns: 2
        columnSpacing: Theme.padding * 2
        rowSpacing: 6
        Repeater {
            model: card.rows.filter(r => r[1] !== undefined && r[1] !== "")
            delegate: Label {
                required property var modelData
                required property int index
                Layout.row: index
                Layout.column: 0
                text: modelData[0]
                color: Theme.textMuted
            }
        }
        Repeater {
            model: card.rows.filter(r => r[1] !== undefined && r[1] !== "")
            delegate: Label {
                required property var modelData
                required property int index
                Layout.row: index
                Layout.column: 1
                Layout.fillWidth: true
                text: modelData[1]
                color: Theme.text
                wrapMode: Text.Wrap
            }
        }
    }
}
