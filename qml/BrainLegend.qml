import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Brain's legend: one swatch per place (the hue), the brightness ramp (how often an expert
// was routed, log scale) and the flash (routed just now). Colours come from the cells' own palette
// (BrainMonitor.swatch), in the current theme.
Flow {
    id: legend
    property QtObject brain
    spacing: Theme.padding * 1.5

    component Swatch: Rectangle {
        implicitWidth: 14
        implicitHeight: 14
        radius: 3
        border.color: Theme.border
    }
    component Entry: Row {
        property alias swatchColor: sw.color
        property alias text: label.text
        property bool marked: false // a user pin: the cells' centre mark
        spacing: 6
        Swatch {
            id: sw
            anchors.verticalCenter: parent.verticalCenter
            Rectangle {
                visible: parent.parent.marked
                anchors.centerIn: parent
                width: 6
                height: 6
                color: legend.brain ? legend.brain.userPinMark(Theme.dark) : Theme.text
            }
        }
        Label {
            id: label
            color: Theme.text
            font.pixelSize: Theme.smallFontSize
            anchors.verticalCenter: parent.verticalCenter
        }
    }

    Repeater {
        model: [{ key: "vram", title: qsTr("In VRAM") },
                { key: "pinned", title: qsTr("Pinned") },
                { key: "user", title: qsTr("User pin") },
                { key: "cached", title: qsTr("Cached") },
                { key: "loading", title: qsTr("Being read") },
                { key: "disk", title: qsTr("On disk") }]
        Entry {
            required property var modelData
            objectName: "brainLegend_" + modelData.key
            swatchColor: legend.brain ? legend.brain.swatch(modelData.key, 1, 0, Theme.dark)
                                      : Theme.border
            text: modelData.title
            marked: modelData.key === "user"
        }
    }
    Row {
        spacing: 6
        Label {
            text: qsTr("rarely")
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            anchors.verticalCenter: parent.verticalCenter
        }
        Row {
            anchors.verticalCenter: parent.verticalCenter
            Repeater {
                model: 6
                Rectangle {
                    required property int index
                    width: 10
                    height: 14
                    color: legend.brain ? legend.brain.swatch("cached", index / 5, 0, Theme.dark)
                                        : Theme.border
                }
            }
        }
        Label {
            text: qsTr("often routed (log)")
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            anchors.verticalCenter: parent.verticalCenter
        }
    }
    Entry {
        swatchColor: legend.brain ? legend.brain.swatch("cached", 0.5, 1, Theme.dark) : Theme.border
        text: qsTr("routed just now (fades in 1 s)")
    }
}
