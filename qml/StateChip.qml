import QtQuick
import QtQuick.Controls
import Colibri

// A small rounded label with the model's load state: empty, loading (with percent), ready, error.
Rectangle {
    id: chip
    property string loadState: "empty"
    property real progress: 0

    readonly property color tone: chip.loadState === "ready" ? Theme.success
                                : chip.loadState === "error" ? Theme.errorText
                                : chip.loadState === "loading" ? Theme.accent : Theme.textMuted
    implicitWidth: label.implicitWidth + 20
    implicitHeight: label.implicitHeight + 8
    radius: height / 2
    color: Qt.rgba(tone.r, tone.g, tone.b, 0.10)
    border.color: Qt.rgba(tone.r, tone.g, tone.b, 0.45)

    Label {
        id: label
        objectName: "loadStateText"
        anchors.centerIn: parent
        color: chip.tone
        font.pixelSize: Theme.smallFontSize
        font.bold: true
        text: chip.loadState === "ready" ? qsTr("Ready")
            : chip.loadState === "error" ? qsTr("Error")
            : chip.loadState === "loading" ? qsTr("Loading %1%").arg(Math.round(chip.progress * 100))
            : qsTr("No model")
    }
}
