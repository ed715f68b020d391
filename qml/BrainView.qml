import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri
import Colibri.Native

// The Brain view: every routed expert of the model as a cell (rows of a layer's experts, layers
// down the sheet), hue = where it is (pinned, cached, being read, on disk, user pin), brightness =
// how often it was routed (log scale), a flash when the router picks it. Modes: this answer's
// routings or all since the model was loaded. Hover names a cell; a click pins or unpins it.
// Data: controller.brain (BrainMonitor; ~30 Hz from the engine's tier status, or the synthetic
// generator); the cells are one scene-graph draw (BrainCells, app/brain_item.h).
Page {
    id: view
    objectName: "brainView"
    property QtObject controller
    readonly property QtObject brain: controller ? controller.brain : null
    readonly property bool live: brain !== null && brain.available
    property var hoverInfo: ({}) // cellInfo of the cell under the mouse, {} when none

    background: Rectangle { color: Theme.background }

    function refreshHover() {
        if (!mouse.containsMouse || !live) { hoverInfo = {}; return }
        const c = cells.cellAt(mouse.mouseX, mouse.mouseY)
        hoverInfo = c.layer === undefined ? {} : brain.cellInfo(c.layer, c.expert)
    }
    Connections { target: view.brain; function onChanged() { view.refreshHover() } }
    // The outcome of a click's pin request (EngineController.pinMessage), for a few seconds.
    property string pinText: ""
    property bool pinOk: true
    Connections {
        target: view.controller
        ignoreUnknownSignals: true
        function onPinMessage(text, ok) {
            view.pinText = text
            view.pinOk = ok
            pinTimer.restart()
        }
    }
    Timer { id: pinTimer; interval: 6000; onTriggered: view.pinText = "" }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: Theme.padding * 1.5
        spacing: Theme.padding

        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            ColumnLayout {
                spacing: 2
                Layout.fillWidth: true
                Label {
                    text: qsTr("Brain")
                    font.pixelSize: Theme.titleFontSize + 4
                    font.bold: true
                    color: Theme.text
                }
                Label {
                    objectName: "brainSummary"
                    Layout.fillWidth: true
                    elide: Text.ElideRight
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                    text: !live ? qsTr("No per-expert telemetry yet.")
                          : qsTr("%1 layers × %2 experts · %3 cells%4")
                              .arg(brain.nLayers).arg(brain.nExperts)
                              .arg((brain.nLayers * brain.nExperts).toLocaleString(Qt.locale("en_US"), "f", 0))
                              .arg(brain.synthetic ? qsTr(" · synthetic telemetry, 10 tokens/s") : "")
                }
            }
            // The mode: this answer's routings, or all since the model was loaded.
            Row {
                objectName: "brainMode"
                spacing: 0
                enabled: view.live
                opacity: enabled ? 1 : 0.45
                Repeater {
                    model: [{ key: "turn", title: qsTr("This answer") },
                            { key: "cumulative", title: qsTr("Since load") }]
                    AbstractButton {
                        id: seg
                        required property var modelData
                        required property int index
                        objectName: "brainMode_" + modelData.key
                        readonly property bool current: view.brain && view.brain.mode === modelData.key
                        implicitWidth: segLabel.implicitWidth + 2 * Theme.padding
                        implicitHeight: 30
                        focusPolicy: Qt.StrongFocus
                        onClicked: view.brain.mode = modelData.key
                        Accessible.role: Accessible.RadioButton
                        Accessible.name: modelData.title
                        Accessible.checked: current
                        background: Rectangle {
                            color: seg.current ? Theme.accent : Theme.surface
                            border.color: seg.visualFocus ? Theme.accent : Theme.border
                            radius: 6
                            // square inner corners: the two buttons read as one control
                            Rectangle {
                                width: parent.radius; height: parent.height - 2; y: 1
                                x: seg.index === 0 ? parent.width - width - 1 : 1
                                color: parent.color
                            }
                        }
                        contentItem: Label {
                            id: segLabel
                            text: seg.modelData.title
                            color: seg.current ? Theme.accentText : Theme.text
                            horizontalAlignment: Text.AlignHCenter
                            verticalAlignment: Text.AlignVCenter
                        }
                    }
                }
            }
        }

        // ---- the sheet ----
        Rectangle {
            id: sheet
            objectName: "brainSheet"
            Layout.fillWidth: true
            Layout.fillHeight: true
            color: view.live ? cells.sheetColor : Theme.surface
            radius: 8
            border.color: Theme.border

            ColumnLayout {
                objectName: "brainEmpty"
                anchors.centerIn: parent
                width: Math.min(parent.width - 4 * Theme.padding, 560)
                visible: !view.live
                spacing: Theme.padding * 0.5
                Label {
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    horizontalAlignment: Text.AlignHCenter
                    color: Theme.textMuted
                    text: qsTr("Each routed expert of the model appears here as a cell once the "
                               + "engine reports where every expert is. To see the view without a "
                               + "model, start the app with a synthetic model:")
                }
                Label {
                    Layout.alignment: Qt.AlignHCenter
                    text: "colibri --synthetic-telemetry 75x256"
                    font.family: Theme.monoFamily
                    color: Theme.text
                }
            }

            BrainCells {
                id: cells
                objectName: "brainCells"
                anchors.fill: parent
                anchors.margins: Theme.padding * 0.75
                monitor: view.brain
                dark: Theme.dark
                visible: view.live
            }
            // Layer numbers in the gap above each block (every n-th when blocks are small).
            Repeater {
                model: view.live && cells.gapPixels >= 8 ? cells.layerLabels : []
                Text {
                    required property var modelData
                    x: cells.x + modelData.x
                    y: cells.y + modelData.y - baselineOffset
                    text: modelData.text
                    color: Theme.textMuted
                    font.pixelSize: Math.min(11, Math.max(8, Math.floor(cells.gapPixels * 0.9)))
                    font.family: Theme.monoFamily
                }
            }
            // The hovered cell, outlined.
            Rectangle {
                readonly property rect r: view.hoverInfo.layer !== undefined
                                          ? cells.cellRect(view.hoverInfo.layer, view.hoverInfo.expert)
                                          : Qt.rect(0, 0, 0, 0)
                visible: r.width > 0
                x: cells.x + r.x - 2
                y: cells.y + r.y - 2
                width: r.width + 4
                height: r.height + 4
                color: "transparent"
                border.color: Theme.text
                border.width: 1.5
            }
            MouseArea {
                id: mouse
                objectName: "brainMouse"
                x: cells.x
                y: cells.y
                width: cells.width
                height: cells.height
                hoverEnabled: true
                cursorShape: view.hoverInfo.layer !== undefined ? Qt.PointingHandCursor : Qt.ArrowCursor
                onPositionChanged: view.refreshHover()
                onExited: view.hoverInfo = {}
                onClicked: {
                    view.refreshHover()
                    if (view.hoverInfo.layer !== undefined)
                        view.brain.requestPin(view.hoverInfo.layer, view.hoverInfo.expert)
                }
            }
            // The outcome of a pin request, over the top of the sheet (the layout does not move).
            Rectangle {
                anchors.horizontalCenter: parent.horizontalCenter
                anchors.top: parent.top
                anchors.topMargin: Theme.padding * 0.5
                visible: view.pinText !== ""
                width: Math.min(parent.width - 2 * Theme.padding, pinLabel.implicitWidth + 2 * Theme.padding)
                height: pinLabel.implicitHeight + Theme.padding
                radius: 6
                color: view.pinOk ? Theme.infoBg : Theme.errorBg
                border.color: view.pinOk ? Theme.infoBorder : Theme.errorBorder
                z: 11
                Label {
                    id: pinLabel
                    objectName: "brainPinMessage"
                    anchors.centerIn: parent
                    width: Math.min(implicitWidth, parent.parent.width - 4 * Theme.padding)
                    elide: Text.ElideRight
                    text: view.pinText
                    color: view.pinOk ? Theme.infoText : Theme.errorText
                    font.pixelSize: Theme.smallFontSize
                }
            }
            BrainHoverPanel {
                objectName: "brainHover"
                info: view.hoverInfo
                visible: view.hoverInfo.layer !== undefined
                topicsAvailable: view.brain ? view.brain.topicsAvailable : false
                // Beside the cursor, inside the sheet.
                x: mouse.x + mouse.mouseX + 16 + width < sheet.width - 8
                   ? mouse.x + mouse.mouseX + 16 : Math.max(8, mouse.x + mouse.mouseX - width - 16)
                y: Math.max(8, Math.min(mouse.y + mouse.mouseY + 16, sheet.height - height - 8))
            }
        }

        BrainLegend {
            Layout.fillWidth: true
            visible: view.live
            brain: view.brain
        }
    }
}
