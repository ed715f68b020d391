import QtQuick
import Colibri

// A horizontal bar split into coloured segments, each `share` (0..1) of the width; the rest is
// the track. `segments`: [{ share, color, name }]. Draws nothing but rectangles: cheap to update
// at ~30 Hz.
Rectangle {
    id: bar
    property var segments: []
    property string emptyText: ""

    implicitHeight: 22
    radius: 5
    color: Theme.background
    border.color: Theme.border
    border.width: 1
    clip: true

    Row {
        anchors.fill: parent
        anchors.margins: 1
        Repeater {
            model: bar.segments
            Rectangle {
                objectName: "segment_" + modelData.name
                width: Math.max(0, Math.min(1, modelData.share)) * (bar.width - 2)
                height: parent.height
                color: modelData.color
            }
        }
    }
    Text {
        anchors.centerIn: parent
        visible: bar.emptyText !== ""
        text: bar.emptyText
        color: Theme.textMuted
        font.family: Theme.fontFamily
        font.pixelSize: Theme.smallFontSize
    }
}
