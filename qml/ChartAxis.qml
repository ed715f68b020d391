import QtQuick
import QtCharts
import Colibri

// A value axis in Theme's colours. `niceMax(v)` and `stepFor(max)` give a range that ends on a
// round number with about four intervals; `fit(max)` sets it (min 0) with matching labels.
ValueAxis {
    id: axis
    labelsColor: Theme.textMuted
    labelsFont.family: Theme.fontFamily
    labelsFont.pixelSize: Theme.smallFontSize - 1
    gridLineColor: Theme.border
    color: Theme.border
    minorGridVisible: false
    titleVisible: false
    min: 0
    max: 1
    tickCount: 5
    labelFormat: "%.0f"

    // 1, 2 or 5 times a power of ten, at least v / 4.
    function stepFor(v) {
        if (!(v > 0)) return 1
        const raw = v / 4
        const p = Math.pow(10, Math.floor(Math.log10(raw)))
        const m = raw / p
        return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p
    }
    // The y range [0, a round number above `v`] with its tick labels' decimals.
    function fit(v) {
        const step = stepFor(v > 0 ? v * 1.05 : 1)
        const top = Math.max(step, Math.ceil((v > 0 ? v * 1.05 : 1) / step) * step)
        min = 0
        max = top
        tickCount = Math.round(top / step) + 1
        const decimals = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)))
        labelFormat = "%." + decimals + "f"
    }
    // 0 to 100 in steps of 25 (shares in per cent).
    function fitPercent() {
        min = 0
        max = 100
        tickCount = 5
        labelFormat = "%.0f"
    }
    // An x axis over turns from+1..n (and one more slot when `extra`), integer labels only, about
    // eight of them at most.
    function fitTurns(n, extra, from) {
        const first = from > 0 ? from : 0
        const last = Math.max(first + 1, n + (extra ? 1 : 0))
        min = first + 0.5
        max = last + 0.5
        tickType = ValueAxis.TicksDynamic
        tickAnchor = 1
        tickInterval = Math.max(1, stepFor((last - first) / 2))
        labelFormat = "%.0f"
    }
}
