import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The table under the RAM bar: one line per place (TierRowsModel), with its colour, experts,
// bytes and the share of routed experts it served (last token, this session).
ColumnLayout {
    id: legend
    property QtObject rows
    property var colorFor
    property var formatBytes
    property var formatShare
    // Every row has the same constraints per column, so the layout gives every row the same
    // widths and the lines align: the numeric columns at their wanted widths, the name column the
    // rest. In a narrow window (down to the window's minimum) all shrink towards their least
    // widths, so the names keep some room instead of vanishing under the numbers.
    readonly property var wanted: [110, 90, 130, 130]
    readonly property var least: [90, 72, 60, 60]
    readonly property int nameWanted: 150
    readonly property int nameLeast: 90

    spacing: 4

    RowLayout {
        Layout.fillWidth: true
        spacing: Theme.padding
        Item { implicitWidth: 12 }
        Repeater {
            model: [qsTr("Place"), qsTr("Experts"), qsTr("Size"), qsTr("Served, last token"),
                    qsTr("Served, session")]
            Label {
                text: modelData
                color: Theme.textMuted
                font.pixelSize: Theme.smallFontSize
                elide: Text.ElideRight
                horizontalAlignment: index > 0 ? Text.AlignRight : Text.AlignLeft
                Layout.fillWidth: true
                Layout.preferredWidth: index > 0 ? legend.wanted[index - 1] : legend.nameWanted
                Layout.minimumWidth: index > 0 ? legend.least[index - 1] : legend.nameLeast
                Layout.maximumWidth: index > 0 ? legend.wanted[index - 1] : Number.POSITIVE_INFINITY
            }
        }
    }
    Repeater {
        model: legend.rows
        delegate: RowLayout {
            objectName: "tierRow_" + model.key
            Layout.fillWidth: true
            spacing: Theme.padding
            readonly property color ink: model.available ? Theme.text : Theme.textMuted
            Accessible.role: Accessible.Row
            Accessible.name: model.name + ": " + model.experts + " experts"
            Rectangle {
                implicitWidth: 12
                implicitHeight: 12
                radius: 3
                color: legend.colorFor(model.key)
                border.color: Theme.border
            }
            Label {
                text: model.available ? model.name : model.name + qsTr(" (no GPU tier)")
                color: parent.ink
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.preferredWidth: legend.nameWanted
                Layout.minimumWidth: legend.nameLeast
            }
            Label {
                text: !model.available ? "–"
                      : model.key === "free" ? qsTr("room for %1").arg(model.experts)
                      : model.capacity >= 0 ? model.experts + " / " + model.capacity
                                            : String(model.experts)
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.preferredWidth: legend.wanted[0]
                Layout.minimumWidth: legend.least[0]
                Layout.maximumWidth: legend.wanted[0]
            }
            Label {
                text: model.available ? legend.formatBytes(model.bytes) : "–"
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.preferredWidth: legend.wanted[1]
                Layout.minimumWidth: legend.least[1]
                Layout.maximumWidth: legend.wanted[1]
            }
            Label {
                text: legend.formatShare(model.hitLast)
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.preferredWidth: legend.wanted[2]
                Layout.minimumWidth: legend.least[2]
                Layout.maximumWidth: legend.wanted[2]
            }
            Label {
                text: legend.formatShare(model.hitSession)
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                elide: Text.ElideRight
                Layout.fillWidth: true
                Layout.preferredWidth: legend.wanted[3]
                Layout.minimumWidth: legend.least[3]
                Layout.maximumWidth: legend.wanted[3]
            }
        }
    }
}
