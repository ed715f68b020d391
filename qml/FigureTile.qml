import QtQuick
import QtQuick.Layouts
import Colibri

// One measured figure: a label, the value for the last token and for the session.
Rectangle {
    id: tile
    property string label: ""
    property string last: "–"
    property string session: "–"
    property string hint: ""

    implicitWidth: Math.max(170, col.implicitWidth + 2 * Theme.padding * 0.75)
    implicitHeight: col.implicitHeight + 2 * Theme.padding * 0.75
    radius: 8
    color: Theme.surface
    border.color: Theme.border
    Accessible.role: Accessible.StaticText
    Accessible.name: label + ": " + last + " last token, " + session + " this session"

    ColumnLayout {
        id: col
        anchors { fill: parent; margins: Theme.padding * 0.75 }
        spacing: 2
        Text {
            text: tile.label
            color: Theme.textMuted
            font.family: Theme.fontFamily
            font.pixelSize: Theme.smallFontSize
            elide: Text.ElideRight
            Layout.fillWidth: true
        }
        Text {
            objectName: "figureSession"
            text: tile.session
            color: Theme.text
            font.family: Theme.fontFamily
            font.pixelSize: Theme.titleFontSize + 4
            font.bold: true
        }
        Text {
            text: tile.hint !== "" ? tile.hint : qsTr("last token: %1").arg(tile.last)
            color: Theme.textMuted
            font.family: Theme.fontFamily
            font.pixelSize: Theme.smallFontSize
            elide: Text.ElideRight
            Layout.fillWidth: true
        }
    }
}
