import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Bytes read from each disk this session (the Tiers view's disk card): the model's disk and, when
// a mirror on a second disk is in use (docs/mirror.md), the mirror, as a split bar and one line
// per disk; a mirror switched off during the run says why.
ColumnLayout {
    id: reads
    property QtObject tiers
    property var formatBytes: function(b) { return b + " B" }
    property color primaryColor: Theme.textMuted
    readonly property color mirrorColor: Theme.success
    // Why the mirror was switched off, without the folder and the consequence the line says anyway:
    // "DIR/FILE: No such file or directory (the mirror was removed or unmounted)".
    readonly property string problem: {
        const p = tiers ? tiers.mirrorProblem : ""
        if (p === "") return ""
        const at = p.indexOf("switched off: "), end = p.lastIndexOf("; every expert")
        return p.substring(at >= 0 ? at + 14 : 0, end > 0 ? end : p.length)
    }
    readonly property bool mirror: tiers !== null && tiers.mirrorActive
    readonly property double primaryBytes: tiers ? tiers.primaryBytesSession : 0
    readonly property double mirrorBytes: tiers ? tiers.mirrorBytesSession : 0
    readonly property double total: primaryBytes + mirrorBytes
    spacing: 4

    function share(b) { return total > 0 ? (100 * b / total).toFixed(0) + " %" : "–" }

    Label {
        text: qsTr("Read this session")
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
    }
    TierBar {
        objectName: "diskReadsBar"
        Layout.fillWidth: true
        implicitHeight: 10
        visible: reads.mirror
        segments: reads.total > 0
                  ? [{ share: reads.primaryBytes / reads.total, color: reads.primaryColor, name: "primary" },
                     { share: reads.mirrorBytes / reads.total, color: reads.mirrorColor, name: "mirror" }]
                  : []
    }
    GridLayout {
        columns: 3
        columnSpacing: Theme.padding
        rowSpacing: 2
        Layout.fillWidth: true
        Rectangle { width: 10; height: 10; radius: 2; color: reads.primaryColor }
        Label { text: qsTr("Model disk"); color: Theme.text; font.pixelSize: Theme.smallFontSize }
        Label {
            objectName: "primaryReads"
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: reads.formatBytes(reads.primaryBytes) + (reads.mirror ? " · " + reads.share(reads.primaryBytes) : "")
        }
        Rectangle { visible: reads.mirror; width: 10; height: 10; radius: 2; color: reads.mirrorColor }
        Label {
            visible: reads.mirror
            text: qsTr("Mirror")
            color: Theme.text
            font.pixelSize: Theme.smallFontSize
        }
        Label {
            objectName: "mirrorReads"
            visible: reads.mirror
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: reads.formatBytes(reads.mirrorBytes) + " · " + reads.share(reads.mirrorBytes)
        }
    }
    Label {
        objectName: "mirrorInfo"
        Layout.fillWidth: true
        visible: reads.mirror
        wrapMode: Text.Wrap
        font.pixelSize: Theme.smallFontSize
        color: reads.problem !== "" ? Theme.errorText : Theme.textMuted
        text: !reads.tiers ? ""
              : reads.problem !== "" ? qsTr("Mirror switched off, the model's disk serves every expert: %1").arg(reads.problem)
              : qsTr("Mirror %1 serves %2 of its experts.").arg(reads.tiers.mirrorDir)
                    .arg((100 * reads.tiers.mirrorShare).toFixed(0) + " %")
    }
}
