import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Charts: the session over time (placeholder until the Charts view lands).
Page {
    id: page
    property QtObject controller
    background: Rectangle { color: Theme.background }
    ColumnLayout {
        anchors { fill: parent; margins: Theme.padding * 2 }
        Label { text: qsTr("Charts"); font.pixelSize: Theme.titleFontSize; font.bold: true; color: Theme.text }
        Label { text: qsTr("Coming in this build."); color: Theme.textMuted }
        Item { Layout.fillHeight: true }
    }
}
