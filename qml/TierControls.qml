import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Tiers view's controls: the RAM budget for experts (a slider and an exact entry in MiB),
// applied by the engine between two tokens, also during an answer; under it what the placement
// plan expects at the budget in force beside what was measured (TierMonitor's plan* figures);
// the prefetch switch.
Pane {
    id: controls
    property QtObject tiers
    property var formatBytes
    property var formatShare
    readonly property bool live: tiers !== null && tiers.available
    readonly property real mibUnit: 1048576

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
