import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick3D
import Colibri

// The Atlas view: every routed expert of the model as a point in 3D, placed by how it is routed
// (the topic probe's embedding), coloured by its dominant topic (grey: generalist), sized by its
// heat; experts routed since the last frame flash while an answer streams. Drag to orbit,
// Shift+drag or right-drag to pan, the wheel zooms, a click shows an expert's details (picked on
// the CPU by AtlasModel: Qt 6.4 has no per-instance picking). `atlas` is the C++ AtlasModel.
Page {
    id: view
    objectName: "atlasView"
    property QtObject controller
    property QtObject atlas
    readonly property bool hasData: atlas !== null && atlas.source !== "none"

    background: Rectangle { color: Theme.background }

    Binding { target: view.atlas; property: "active"; value: view.visible; when: view.atlas !== null }
    Binding { target: view.atlas; property: "dark"; value: Theme.dark; when: view.atlas !== null }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: Theme.padding * 1.5
        spacing: Theme.padding

        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 2
                Label {
                    text: qsTr("Expert atlas")
                    font.pixelSize: Theme.titleFontSize + 4
                    font.bold: true
                    color: Theme.text
                }
                Label {
                    objectName: "atlasSummary"
                    Layout.fillWidth: true
                    elide: Text.ElideRight
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                    text: view.hasData
                          ? view.atlas.sourceText + qsTr(" · drag to turn, Shift+drag to pan, wheel to zoom, click an expert")
                          : qsTr("Experts placed by how the router uses them, once the topic probe has run")
                }
            }
            AppButton {
                objectName: "atlasResetCamera"
                text: qsTr("Reset view")
                visible: view.hasData
                onClicked: view.atlas.resetCamera()
            }
        }

        RowLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            spacing: Theme.padding

            Rectangle {
                id: frame
                objectName: "atlasFrame"
                Layout.fillWidth: true
                Layout.fillHeight: true
                radius: Theme.radius
                color: view.sceneColor
                border.color: Theme.border
                clip: true

                View3D {
                    id: scene
                    objectName: "atlasScene"
                    anchors.fill: parent
                    anchors.margins: 1
                    visible: view.hasData
                    environment: SceneEnvironment {
                        backgroundMode: SceneEnvironment.Color
                        clearColor: view.sceneColor
                        antialiasingMode: SceneEnvironment.NoAA
                    }
                    camera: camera
                    PerspectiveCamera {
                        id: camera
                        position: view.atlas ? view.atlas.cameraPosition : Qt.vector3d(0, 0, 300)
                        rotation: view.atlas ? view.atlas.cameraRotation : Qt.quaternion(1, 0, 0, 0)
                        fieldOfView: view.atlas ? view.atlas.fieldOfView : 50
                        clipNear: view.atlas ? view.atlas.clipNear : 1
                        clipFar: view.atlas ? view.atlas.clipFar : 10000
                        // A light from over the viewer's shoulder: every facet a point shows is
                        // lit, the ambient part keeps the far facets in their topic's hue.
                        DirectionalLight {
                            eulerRotation: Qt.vector3d(-25, -20, 0)
                            brightness: 0.75
                            ambientColor: Qt.rgba(0.5, 0.5, 0.5, 1)
                        }
                    }
                    Model {
                        objectName: "atlasPoints"
                        geometry: view.atlas ? view.atlas.geometry : null
                        instancing: view.atlas ? view.atlas.instancing : null
                        materials: DefaultMaterial { diffuseColor: "white" }
                    }
                }

                // The selected expert: a ring at its projection (follows the camera).
                Rectangle {
                    objectName: "atlasSelectionRing"
                    readonly property point at: {
                        if (!view.atlas || view.atlas.selected < 0) return Qt.point(-100, -100)
                        view.atlas.cameraPosition // re-evaluated when the camera moves
                        return view.atlas.projectPoint(view.atlas.selected, scene.width, scene.height)
                    }
                    visible: view.hasData && view.atlas.selected >= 0 && at.x >= 0
                    x: scene.x + at.x - width / 2
                    y: scene.y + at.y - height / 2
                    width: 26
                    height: 26
                    radius: 13
                    color: "transparent"
                    border.width: 2
                    border.color: Theme.accent
                }

                MouseArea {
                    id: mouse
                    objectName: "atlasMouse"
                    anchors.fill: scene
                    enabled: view.hasData
                    acceptedButtons: Qt.LeftButton | Qt.RightButton | Qt.MiddleButton
                    property point last
                    property bool moved: false
                    onPressed: function(m) { last = Qt.point(m.x, m.y); moved = false }
                    onPositionChanged: function(m) {
                        const dx = m.x - last.x, dy = m.y - last.y
                        if (!moved && Math.abs(dx) + Math.abs(dy) < 4)
                            return // a click that trembles is still a click
                        moved = true
                        if ((m.buttons & Qt.LeftButton) && !(m.modifiers & Qt.ShiftModifier))
                            view.atlas.orbit(dx, dy)
                        else
                            view.atlas.pan(dx, dy, width, height)
                        last = Qt.point(m.x, m.y)
                    }
                    onReleased: function(m) {
                        if (!moved && m.button === Qt.LeftButton)
                            view.atlas.selectAt(m.x, m.y, width, height)
                    }
                    onWheel: function(w) { view.atlas.zoom(w.angleDelta.y / 120) }
                }

                // No atlas for this model: what the view would show, and how to get it.
                ColumnLayout {
                    objectName: "atlasEmpty"
                    visible: !view.hasData
                    anchors.centerIn: parent
                    width: Math.min(parent.width - 4 * Theme.padding, 460)
                    spacing: Theme.padding
                    Label {
                        Layout.fillWidth: true
                        horizontalAlignment: Text.AlignHCenter
                        wrapMode: Text.Wrap
                        font.pixelSize: Theme.titleFontSize
                        font.bold: true
                        color: Theme.text
                        text: view.controller && view.controller.loadState === "ready"
                              ? qsTr("No topic probe data for this model yet")
                              : qsTr("No model loaded")
                    }
                    Label {
                        Layout.fillWidth: true
                        horizontalAlignment: Text.AlignHCenter
                        wrapMode: Text.Wrap
                        color: Theme.textMuted
                        text: qsTr("The atlas places each expert by how the router uses it: the topic probe routes a fixed set of prompts per topic (code, mathematics, law, poetry, ...) through the model, prefill only, and measures each expert's share per topic. Experts that serve one topic cluster together; the others are generalists. Run the probe once per model (Run topic probe, on the right); the result is kept.")
                    }
                }
            }

            AtlasPanel {
                objectName: "atlasPanel"
                Layout.fillHeight: true
                // A fixed width: the galaxy takes the rest.
                Layout.preferredWidth: 256
                Layout.minimumWidth: 256
                Layout.maximumWidth: 256
                atlas: view.atlas
                controller: view.controller
            }
        }
    }

    // A touch darker (dark theme) or lighter than the page: the galaxy's own space.
    readonly property color sceneColor: Theme.dark ? "#101216" : "#fbfcfd"
}
