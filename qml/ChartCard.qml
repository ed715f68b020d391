import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// A card of the Charts view: a title, a one-line note, its own legend (swatches in Theme's
// colours: Qt Charts' legend cannot hide single entries) and the chart below, filling the rest.
// `legend`: [{ name, color, dashed }]. The chart goes in as the card's child.
Rectangle {
    id: card
    property string title
    property string note
    property var legend: []
    default property alias content: body.data

    color: Theme.surface
    radius: 8
    border.color: Theme.border
    Accessible.role: Accessible.Chart
    Accessible.name: title + (note ? ". " + note : "")

    ColumnLayout {
        anchors { fill: parent; margins: Theme.padding; bottomMargin: Theme.padding / 2 }
        spacing: 2
        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            Label {
                text: card.title
                font.bold: true
                color: Theme.text
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
            Label {
                text: card.note
                visible: text.length > 0
                color: Theme.textMuted
                font.pixelSize: Theme.smallFontSize
                elide: Text.ElideLeft
                Layout.maximumWidth: card.width * 0.55
            }
        }
        Flow {
            Layout.fillWidth: true
            spacing: Theme.padding
            visible: card.legend.length > 0
            Repeater {
                model: card.legend
                Row {
                    spacing: 5
                    Rectangle {
                        anchors.verticalCenter: parent.verticalCenter
                        width: 14
                        height: modelData.dashed ? 3 : 10
                        radius: modelData.dashed ? 0 : 2
                        color: modelData.color
                        opacity: modelData.dashed ? 0.8 : 1
                    }
                    Label {
                        text: modelData.name
                        color: Theme.textMuted
                        font.pixelSize: Theme.smallFontSize
                    }
                }
            }
        }
        Item {
            id: body
            Layout.fillWidth: true
            Layout.fillHeight: true
        }
    }
}
