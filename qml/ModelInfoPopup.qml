import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The loaded model at a glance (EngineController.modelDetails): architecture, parameters in
// total and active per token, experts, quantisation, context length, size on disk, folder.
Popup {
    id: popup
    property QtObject controller
    readonly property var d: controller ? controller.modelDetails : ({})

    padding: Theme.padding
    modal: false
    focus: true
    background: Rectangle { color: Theme.surface; radius: 8; border.color: Theme.border }

    function millions(n) { return n >= 1e9 ? (n / 1e9).toFixed(2) + " B" : (n / 1e6).toFixed(1) + " M" }
    function size(b) { return b >= 1073741824 ? (b / 1073741824).toFixed(2) + " GiB" : (b / 1048576).toFixed(1) + " MiB" }

    GridLayout {
        columns: 2
        columnSpacing: Theme.padding
        rowSpacing: 4
        Repeater {
            model: popup.d.architecture === undefined ? [] : [
                [qsTr("Architecture"), popup.d.architecture],
                [qsTr("Parameters"), qsTr("%1 total, %2 active per token").arg(popup.millions(popup.d.totalParams)).arg(popup.millions(popup.d.activeParams))],
                [qsTr("Experts"), qsTr("%1 per layer, top-%2, %3 MoE layers of %4").arg(popup.d.expertsPerLayer).arg(popup.d.topK).arg(popup.d.moeLayers).arg(popup.d.layers)],
                [qsTr("Weights"), popup.d.storage],
                [qsTr("Context"), qsTr("%1 tokens").arg(popup.d.contextLength)],
                [qsTr("Size on disk"), popup.size(popup.d.diskBytes)],
                [qsTr("Folder"), popup.controller ? popup.controller.modelDir : ""]
            ]
            delegate: Item {
                Layout.columnSpan: 2
                Layout.fillWidth: true
                implicitWidth: rowLayout.implicitWidth
                implicitHeight: rowLayout.implicitHeight
                RowLayout {
                    id: rowLayout
                    anchors.fill: parent
                    spacing: Theme.padding
                    Label { text: modelData[0]; color: Theme.textMuted; Layout.preferredWidth: 110 }
                    Label {
                        text: modelData[1]
                        color: Theme.text
                        wrapMode: Text.WrapAnywhere
                        horizontalAlignment: Text.AlignLeft
                        Layout.fillWidth: true
                        Layout.maximumWidth: 420
                    }
                }
            }
        }
    }
}
