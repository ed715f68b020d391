import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Tiers: live residency of the routed experts (placeholder until the Tiers view lands).
Page {
    id: page
    property QtObject controller
    property QtObject appSettings
    background: Rectangle { color: Theme.background }
    ColumnLayout {
        anchors { fill: parent; margins: Theme.padding * 2 }
        Label { text: qsTr("Tiers"); font.pixelSize: Theme.titleFontSize; font.bold: true; color: Theme.text }
        Label { text: qsTr("Coming in this build."); color: Theme.textMuted }
        Item { Layout.fillHeight: true }
    }
}
