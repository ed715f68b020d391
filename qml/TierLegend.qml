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
    // Numeric columns keep their width so the lines align; the name column takes the rest.
    readonly property var widths: [96, 90, 130, 130]

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
                Layout.fillWidth: index === 0
                Layout.preferredWidth: index > 0 ? legend.widths[index - 1] : -1
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
            }
            Label {
                text: !model.available ? "–"
                      : model.key === "free" ? qsTr("room for %1").arg(model.experts)
                      : model.capacity >= 0 ? model.experts + " / " + model.capacity
                                            : String(model.experts)
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                Layout.preferredWidth: legend.widths[0]
            }
            Label {
                text: model.available ? legend.formatBytes(model.bytes) : "–"
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                Layout.preferredWidth: legend.widths[1]
            }
            Label {
                text: legend.formatShare(model.hitLast)
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                Layout.preferredWidth: legend.widths[2]
            }
            Label {
                text: legend.formatShare(model.hitSession)
                color: parent.ink
                horizontalAlignment: Text.AlignRight
                Layout.preferredWidth: legend.widths[3]
            }
        }
    }
}
