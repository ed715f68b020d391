import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Tiers view's controls: the RAM budget for experts (a slider and an exact entry in MiB),
// applied by the engine between two tokens, also during an answer; under it what the placement
// plan expects at the budget in force beside what was measured (TierMonitor's plan* figures);
// with a GPU tier the VRAM budget (whole experts, applied between two answers, remembered for the
// next loads); the prefetch switch.
Pane {
    id: controls
    property QtObject tiers
    property var formatBytes
    property var formatShare
    readonly property bool live: tiers !== null && tiers.available
    readonly property bool gpu: live && tiers.vramAvailable
    readonly property real mibUnit: 1048576
    // An expert can be far smaller than a MiB: KiB below one.
    function fineBytes(b) { return b < mibUnit ? (b / 1024).toFixed(1) + " KiB" : formatBytes(b) }
    // The VRAM budget shown: the one asked for until the engine ran it, else the one in force.
    readonly property real vramShown: !gpu ? 0 : tiers.vramBudgetAskedBytes >= 0
                                                 ? tiers.vramBudgetAskedBytes : tiers.vramBudgetBytes

    padding: Theme.padding
    background: Rectangle { color: Theme.surface; radius: 8; border.color: Theme.border }

    GridLayout {
        anchors.fill: parent
        columns: 3
        columnSpacing: Theme.padding
        rowSpacing: Theme.padding * 0.5

        Label { text: qsTr("RAM budget for experts"); color: Theme.text }
        Slider {
            id: budgetSlider
            objectName: "budgetSlider"
            Layout.fillWidth: true
            Accessible.name: qsTr("RAM budget for experts")
            enabled: controls.live
            from: controls.live ? controls.tiers.minimumBudgetBytes : 0
            to: controls.live ? controls.tiers.maximumBudgetBytes : 1
            // Follows the budget in force unless the user is dragging it.
            Binding on value {
                when: !budgetSlider.pressed
                value: controls.live ? controls.tiers.budgetBytes : 0
            }
            onMoved: controls.tiers.setBudgetBytes(value)
        }
        RowLayout {
            spacing: 4
            TextField {
                id: budgetField
                objectName: "budgetField"
                Accessible.name: qsTr("RAM budget for experts in MiB")
                enabled: controls.live
                implicitWidth: 90
                horizontalAlignment: Text.AlignRight
                validator: DoubleValidator { bottom: 0; decimals: 1; notation: DoubleValidator.StandardNotation }
                text: controls.live && !activeFocus
                      ? (controls.tiers.budgetBytes / controls.mibUnit).toFixed(1) : text
                onEditingFinished: {
                    const v = Number.fromLocaleString(Qt.locale(), text)
                    if (!isNaN(v)) controls.tiers.setBudgetBytes(v * controls.mibUnit)
                    focus = false
                }
            }
            Label { text: qsTr("MiB"); color: Theme.textMuted }
        }

        Item { implicitWidth: 1 }
        Label {
            Layout.columnSpan: 2
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: controls.live
                  ? qsTr("From %1 (the working set) to %2 (every expert). Changes speed, never the answer.")
                        .arg(controls.formatBytes(controls.tiers.minimumBudgetBytes))
                        .arg(controls.formatBytes(controls.tiers.maximumBudgetBytes))
                  : ""
        }

        // "Plan at this budget: hit rate 62.0 % (learned heat), 3.9 tok/s
        //  Measured: hit rate 58.0 % this session, 3.1 tok/s last answer"
        Item { implicitWidth: 1 }
        Label {
            objectName: "planLine"
            Layout.columnSpan: 2
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            visible: controls.live
            function rate(x) { return x < 0 ? "–" : x.toFixed(x >= 100 ? 0 : 1) + " tok/s" }
            function source(s) {
                return s === "heat" ? qsTr("learned heat")
                     : s === "all fit" ? qsTr("every expert fits")
                     : s === "none fit" ? qsTr("no expert fits") : qsTr("no learned usage yet")
            }
            text: !controls.live ? ""
                  : qsTr("Plan at this budget: hit rate %1 (%2), %3\nMeasured: hit rate %4 this session, %5 last answer")
                        .arg(controls.formatShare(controls.tiers.planHitRate))
                        .arg(source(controls.tiers.planHitSource))
                        .arg(rate(controls.tiers.planTokensPerSecond))
                        .arg(controls.formatShare(controls.tiers.hitRateSession))
                        .arg(rate(controls.tiers.measuredTokensPerSecond))
        }

        // Apart from the RAM budget's lines above it.
        Label {
            visible: controls.gpu
            Layout.topMargin: Theme.padding * 0.5
            text: qsTr("VRAM budget for experts")
            color: Theme.text
        }
        Slider {
            id: vramSlider
            objectName: "vramBudgetSlider"
            visible: controls.gpu
            Layout.fillWidth: true
            Layout.topMargin: Theme.padding * 0.5
            Accessible.name: qsTr("VRAM budget for experts")
            from: controls.gpu ? controls.tiers.minimumVramBudgetBytes : 0
            to: controls.gpu ? controls.tiers.maximumVramBudgetBytes : 1
            stepSize: controls.gpu ? controls.tiers.minimumVramBudgetBytes : 0 // whole experts
            snapMode: Slider.SnapAlways
            Binding on value {
                when: !vramSlider.pressed
                value: controls.vramShown
            }
            // On release (and per key press): each change re-allocates the GPU's expert memory.
            onMoved: if (!pressed) controls.tiers.setVramBudgetBytes(value)
            onPressedChanged: if (!pressed) controls.tiers.setVramBudgetBytes(value)
        }
        RowLayout {
            visible: controls.gpu
            Layout.topMargin: Theme.padding * 0.5
            spacing: 4
            TextField {
                objectName: "vramBudgetField"
                Accessible.name: qsTr("VRAM budget for experts in MiB")
                implicitWidth: 90
                horizontalAlignment: Text.AlignRight
                validator: DoubleValidator { bottom: 0; decimals: 2; notation: DoubleValidator.StandardNotation }
                text: controls.gpu && !activeFocus ? (controls.vramShown / controls.mibUnit).toFixed(2) : text
                onEditingFinished: {
                    const v = Number.fromLocaleString(Qt.locale(), text)
                    if (!isNaN(v)) controls.tiers.setVramBudgetBytes(v * controls.mibUnit)
                    focus = false
                }
            }
            Label { text: qsTr("MiB"); color: Theme.textMuted }
        }
        Item { visible: controls.gpu; implicitWidth: 1 }
        Label {
            objectName: "vramBudgetHint"
            visible: controls.gpu
            Layout.columnSpan: 2
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: controls.gpu && controls.tiers.vramBudgetAskedBytes >= 0 ? Theme.accent : Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: !controls.gpu ? ""
                  : controls.tiers.vramBudgetAskedBytes >= 0
                    ? qsTr("%1 experts asked for: applied when the answer being written ends.")
                          .arg(Math.floor(controls.tiers.vramBudgetAskedBytes / controls.tiers.minimumVramBudgetBytes))
                    : qsTr("Holds %1 of %2 experts (%3 each). Applied between answers, kept for the next loads.")
                          .arg(controls.tiers.vramCapacity).arg(controls.tiers.totalExperts)
                          .arg(controls.fineBytes(controls.tiers.minimumVramBudgetBytes))
        }

        Label { text: qsTr("Prefetch (router lookahead)"); color: Theme.text }
        Switch {
            objectName: "prefetchSwitch"
            Accessible.name: qsTr("Prefetch experts with the router lookahead")
            enabled: controls.live
            checked: controls.live && controls.tiers.prefetch
            onToggled: controls.tiers.setPrefetchEnabled(checked)
        }
        Label {
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: controls.live ? qsTr("I/O: %1, %2").arg(controls.tiers.backend)
                                  .arg(controls.tiers.readMode)
                                : ""
        }
    }
}
