import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Atlas view's side panel: find an expert by (layer, expert), the selected expert's
// details, the topic legend with toggles (a hidden topic is neither drawn nor picked) and the
// topic probe. `atlas` is the C++ AtlasModel, `controller` the EngineController.
ScrollView {
    id: panel
    property QtObject atlas
    property QtObject controller
    readonly property bool hasData: atlas !== null && atlas.source !== "none"
    readonly property var info: atlas ? atlas.details : ({})
    // The topic probe's engine command (EngineController::runTopicProbe, docs/app.md).
    readonly property bool probeRunning: controller !== null && controller.probeRunning

    contentWidth: availableWidth
    clip: true

    component Card: Rectangle {
        default property alias content: box.data
        Layout.fillWidth: true
        implicitHeight: box.implicitHeight + 2 * Theme.padding
        radius: Theme.radius
        color: Theme.surface
        border.color: Theme.border
        ColumnLayout {
            id: box
            anchors { fill: parent; margins: Theme.padding }
            spacing: 6
        }
    }
    component Heading: Label {
        font.bold: true
        color: Theme.text
    }
    component Muted: Label {
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
    }

    ColumnLayout {
        width: panel.availableWidth
        spacing: Theme.padding

        Card {
            visible: panel.hasData
            Heading { text: qsTr("Find an expert") }
            RowLayout {
                spacing: 6
                Label { text: qsTr("Layer"); color: Theme.textMuted }
                TextField {
                    id: layerField
                    objectName: "atlasFindLayer"
                    Layout.preferredWidth: 52
                    validator: IntValidator { bottom: 0; top: 9999 }
                    onAccepted: findButton.clicked()
                }
                Label { text: qsTr("Expert"); color: Theme.textMuted }
                TextField {
                    id: expertField
                    objectName: "atlasFindExpert"
                    Layout.preferredWidth: 52
                    validator: IntValidator { bottom: 0; top: 99999 }
                    onAccepted: findButton.clicked()
                }
            }
            AppButton {
                id: findButton
                objectName: "atlasFindButton"
                text: qsTr("Find")
                enabled: layerField.text !== "" && expertField.text !== ""
                onClicked: {
                    const ok = panel.atlas.findExpert(parseInt(layerField.text), parseInt(expertField.text))
                    findMessage.text = ok ? "" : qsTr("No expert %1 in layer %2 (or its topic is hidden).")
                                                 .arg(expertField.text).arg(layerField.text)
                }
            }
            Muted { id: findMessage; objectName: "atlasFindMessage"; visible: text !== "" }
        }

        Card {
            objectName: "atlasDetails"
            visible: panel.hasData
            Heading {
                objectName: "atlasDetailsTitle"
                text: panel.atlas && panel.atlas.selected >= 0
                      ? qsTr("Layer %1 · expert %2").arg(panel.info.layer).arg(panel.info.expert)
                      : qsTr("No expert selected")
            }
            Muted {
                visible: !panel.atlas || panel.atlas.selected < 0
                text: qsTr("Click a point to see its topics, hits and where it is now.")
            }
            GridLayout {
                visible: panel.atlas !== null && panel.atlas.selected >= 0
                columns: 2
                columnSpacing: Theme.padding
                rowSpacing: 3
                Label { text: qsTr("Kind"); color: Theme.textMuted }
                Label {
                    objectName: "atlasDetailsKind"
                    Layout.fillWidth: true
                    elide: Text.ElideRight
                    color: Theme.text
                    text: panel.info.specialist ? qsTr("specialist in %1").arg(panel.info.topic)
                                                : qsTr("generalist")
                }
                Label { text: qsTr("Hits"); color: Theme.textMuted }
                Label { objectName: "atlasDetailsHits"; text: panel.info.hits !== undefined ? panel.info.hits : ""; color: Theme.text }
                Label { text: qsTr("Now"); color: Theme.textMuted }
                Label { objectName: "atlasDetailsState"; text: panel.info.state || ""; color: Theme.text }
            }
            Repeater {
                model: panel.atlas && panel.atlas.selected >= 0 ? panel.info.shares : []
                delegate: RowLayout {
                    Layout.fillWidth: true
                    spacing: 6
                    Rectangle { implicitWidth: 10; implicitHeight: 10; radius: 5; color: modelData.color }
                    Label {
                        Layout.fillWidth: true
                        elide: Text.ElideRight
                        text: modelData.name
                        color: Theme.text
                    }
                    Label {
                        text: (100 * modelData.share).toFixed(1) + " %"
                        color: Theme.textMuted
                        font.family: Theme.monoFamily
                        font.pixelSize: Theme.smallFontSize
                    }
                }
            }
        }

        Card {
            objectName: "atlasLegend"
            visible: panel.hasData
            Heading { text: qsTr("Topics") }
            Muted { text: qsTr("Colour: dominant topic. Size: how often routed. Click a topic to hide or show it.") }
            Repeater {
                model: panel.atlas ? panel.atlas.legend : []
                delegate: ItemDelegate {
                    objectName: "atlasTopic_" + modelData.index
                    Layout.fillWidth: true
                    padding: 3
                    leftPadding: 4
                    opacity: modelData.visible ? 1 : 0.45
                    onClicked: panel.atlas.setTopicVisible(modelData.index, !modelData.visible)
                    Accessible.name: modelData.name + (modelData.visible ? "" : qsTr(" (hidden)"))
                    background: Rectangle { color: parent.hovered ? Theme.accentSoft : "transparent"; radius: 4 }
                    contentItem: RowLayout {
                        spacing: 8
                        Rectangle {
                            implicitWidth: 12
                            implicitHeight: 12
                            radius: 6
                            color: modelData.visible ? modelData.color : "transparent"
                            border.color: modelData.color
                            border.width: 2
                        }
                        Label {
                            Layout.fillWidth: true
                            elide: Text.ElideRight
                            text: modelData.name
                            color: Theme.text
                        }
                        Label {
                            text: modelData.index < 0 ? modelData.experts : modelData.specialists
                            color: Theme.textMuted
                            font.pixelSize: Theme.smallFontSize
                        }
                    }
                }
            }
        }

        Card {
            objectName: "atlasProbe"
            Heading { text: qsTr("Topic probe") }
            Muted {
                objectName: "atlasProbeText"
                text: panel.probeRunning ? (panel.controller.probeStatus || qsTr("The probe runs…"))
                      : panel.controller && panel.controller.probeStatus !== ""
                        ? panel.controller.probeStatus
                        : qsTr("Routes a fixed set of prompts per topic through the loaded model (prefill only; an answer sent meanwhile waits) and places every expert. About as long as reading a few thousand prompt tokens: seconds on a small model, longer on a large one; the result is kept.")
            }
            ProgressBar {
                objectName: "atlasProbeProgress"
                Layout.fillWidth: true
                visible: panel.probeRunning
                from: 0
                to: panel.probeRunning ? Math.max(1, panel.controller.probeTokensTotal) : 1
                value: panel.probeRunning ? panel.controller.probeTokensDone : 0
            }
            AppButton {
                objectName: "atlasRunProbe"
                visible: !panel.probeRunning
                primary: !panel.hasData
                text: panel.hasData ? qsTr("Run topic probe again") : qsTr("Run topic probe")
                enabled: panel.controller !== null && panel.controller.loadState === "ready"
                         && !panel.controller.generating
                onClicked: panel.controller.runTopicProbe()
            }
            AppButton {
                objectName: "atlasCancelProbe"
                visible: panel.probeRunning
                text: qsTr("Cancel probe")
                onClicked: panel.controller.cancelTopicProbe()
            }
        }
        Item { Layout.fillHeight: true }
    }
}
