import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The details of the cell under the mouse (BrainMonitor.cellInfo): layer, expert, where it is,
// how often it was routed, the bytes one read of it costs, its top topics, and what a click does.
Rectangle {
    id: panel
    property var info: ({})
    property bool topicsAvailable: false

    function mib(bytes) {
        return bytes >= 1048576 ? (bytes / 1048576).toFixed(1) + " MiB"
                                : (bytes / 1024).toFixed(0) + " KiB"
    }
    function times(n) { return n === 1 ? qsTr("1 time") : qsTr("%1 times").arg(n) }

    implicitWidth: Math.max(230, column.implicitWidth + 2 * Theme.padding)
    implicitHeight: column.implicitHeight + 2 * Theme.padding * 0.75
    width: implicitWidth
    height: implicitHeight
    radius: 8
    color: Theme.surface
    border.color: Theme.border
    z: 10

    ColumnLayout {
        id: column
        x: Theme.padding
        y: Theme.padding * 0.75
        spacing: 3
        Label {
            objectName: "brainHoverTitle"
            text: panel.info.layer === undefined ? ""
                  : qsTr("Layer %1 · expert %2").arg(panel.info.layer).arg(panel.info.expert)
            font.bold: true
            color: Theme.text
        }
        Label {
            objectName: "brainHoverState"
            text: panel.info.layer === undefined ? ""
                  : panel.info.stateName + (panel.info.userPin ? qsTr(" · user pin") : "")
            color: Theme.text
        }
        Label {
            text: panel.info.layer === undefined ? ""
                  : qsTr("Routed %1 this answer, %2 since load")
                        .arg(panel.times(panel.info.turnHits)).arg(panel.info.totalHits)
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
        }
        Label {
            text: panel.info.layer === undefined ? ""
                  : qsTr("Heat %1 % (log scale) · %2 per read")
                        .arg(Math.round(100 * panel.info.heat)).arg(panel.mib(panel.info.bytes))
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
        }
        Label {
            objectName: "brainHoverTopics"
            Layout.maximumWidth: 300
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: {
                if (!panel.topicsAvailable)
                    return qsTr("Topics: no topic probe yet")
                const t = panel.info.topics || []
                if (t.length === 0)
                    return qsTr("Topics: not routed by the probe")
                return qsTr("Topics: ") + t.map(x => x.label + " " + Math.round(100 * x.share) + " %")
                                            .join(", ")
            }
        }
        Label {
            text: panel.info.userPin || panel.info.state === "pinned"
                  ? qsTr("Click to unpin") : qsTr("Click to pin in RAM")
            color: Theme.accent
            font.pixelSize: Theme.smallFontSize
        }
    }
}
