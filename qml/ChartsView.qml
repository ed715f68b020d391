import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtCharts
import Colibri

// The Charts view: the conversation shown, answer by answer (docs/app.md "Charts"). Data:
// `stats` (TurnStatsModel: one row per answered turn, from the session's runs, appended as each
// answer ends; `stats.live`: the live tok/s of the answer being written). Qt Charts does not
// rescale axes for appended points, so every range is set here from the data.
Page {
    id: view
    property QtObject controller
    property QtObject appSettings
    property QtObject stats
    readonly property QtObject live: stats ? stats.live : null
    readonly property int turns: stats ? stats.count : 0
    readonly property bool streaming: live !== null && live.streaming
    readonly property bool empty: turns === 0 && !streaming && !(live && live.count > 0)
    readonly property bool tiered: stats !== null && stats.tiered
    readonly property bool vram: stats !== null && stats.vram // some answer computed on a GPU
    // The time split draws one bar per answer: the latest ones when there are more.
    readonly property int splitWindow: 40

    ChartInk { id: ink }

    // Over a tier chart when the model's experts are all resident (nothing routed through tiers).
    component NoTiersNote: Label {
        anchors.centerIn: parent
        width: parent.width - 2 * Theme.padding
        horizontalAlignment: Text.AlignHCenter
        wrapMode: Text.Wrap
        text: qsTr("This model's experts are all in RAM: none were read from disk.")
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
    }

    function num(v, decimals) { return Number(v).toFixed(decimals) }
    function pct(v) { return (100 * v).toFixed(0) + " %" }
    function mean(list) {
        let s = 0
        for (const v of list) s += v
        return list.length > 0 ? s / list.length : 0
    }
    // Points (turn, value * scale); turns whose `keep` is false are left out.
    function fill(series, ys, scale, keep) {
        series.clear()
        for (let i = 0; i < ys.length; ++i)
            if (!keep || keep[i]) series.append(i + 1, ys[i] * scale)
    }

    // Everything but the live samples, from the rows (a few dozen points: cheap).
    function rebuild() {
        const n = turns
        const rate = stats ? stats.column("tokensPerSecond") : []
        fill(rateLine, rate, 1)
        rateX.fitTurns(n, streaming)
        updateLiveMarker()

        fill(ttftLine, stats ? stats.column("ttft") : [], 1)
        ttftX.fitTurns(n, false)
        ttftY.fit(stats ? stats.maxTtft : 0)

        // A turn that routed no expert (stopped before its first token) has no shares.
        const routed = stats ? stats.column("tiered") : []
        fill(vramLine, stats ? stats.column("hitVram") : [], 100, routed)
        fill(pinnedLine, stats ? stats.column("hitPinned") : [], 100, routed)
        fill(cacheLine, stats ? stats.column("hitCache") : [], 100, routed)
        fill(inFlightLine, stats ? stats.column("hitInFlight") : [], 100, routed)
        fill(diskLine, stats ? stats.column("hitDisk") : [], 100, routed)
        hitX.fitTurns(n, false)
        hitY.fitPercent()

        fill(mibLine, stats ? stats.column("mibPerToken") : [], 1)
        mibX.fitTurns(n, false)
        mibY.fit(stats ? stats.maxMibPerToken : 0)

        rebuildSplit()
        summary.refresh()
    }

    function rebuildSplit() {
        // Bar i stands at x = i: a leading empty bar puts turn t at x = t, so the axis shows turn
        // numbers; the range shows the last `splitWindow` turns (earlier bars fall outside).
        const parts = [[splitAttention, "attentionShare"], [splitFfn, "expertFfnShare"],
                       [splitWait, "expertWaitShare"], [splitSampling, "samplingShare"],
                       [splitOther, "otherShare"]]
        for (const [set, role] of parts)
            set.values = [0].concat((stats ? stats.column(role) : []).map(v => 100 * v))
        splitX.fitTurns(turns, false, Math.max(0, turns - splitWindow))
        splitY.fitPercent()
    }

    // While an answer streams: its live tok/s as a hollow point one turn to the right, joined
    // to the last answer by a dashed line.
    function updateLiveMarker() {
        liveNow.clear()
        liveLink.clear()
        const latest = live ? live.latest : 0
        let top = stats ? stats.maxTokensPerSecond : 0
        if (streaming && latest > 0) {
            liveNow.append(turns + 1, latest)
            if (turns > 0) {
                liveLink.append(turns, rateLine.at(turns - 1).y)
                liveLink.append(turns + 1, latest)
            }
            top = Math.max(top, latest)
        }
        rateY.fit(top)
    }

    // The live curve of the answer being written (or of the last one): appended sample by sample
    // (`full`: read again from the model).
    function appendLive(full) {
        if (!live) {
            liveLine.clear()
            return
        }
        if (full || live.count < liveLine.count || live.count > liveLine.count + 1) {
            liveLine.clear()
            for (const p of live.points()) liveLine.append(p.x, p.y)
        } else if (live.count === liveLine.count + 1) {
            const p = live.sample(live.count - 1)
            liveLine.append(p.x, p.y)
        }
        liveX.fit(Math.max(1, live.maxSeconds))
        liveY.fit(live.maxTokensPerSecond)
        if (streaming) updateLiveMarker()
    }

    // A hidden view only notes that it is behind (Qt Charts re-renders a chart's image on every
    // change, also when it is not shown) and catches up when it is shown again.
    property bool behind: false
    function refresh() {
        behind = !visible
        if (behind) return
        rebuild()
        appendLive(true)
    }
    onVisibleChanged: if (visible && behind) refresh()
    Connections {
        target: view.stats
        function onCountChanged() { view.refresh() }
    }
    Connections {
        target: view.live
        function onCountChanged() {
            if (view.visible && !view.behind) view.appendLive(false)
            else view.behind = true
        }
        function onStreamingChanged() { view.refresh() }
    }
    onStatsChanged: refresh()
    Component.onCompleted: refresh()

    background: Rectangle { color: Theme.background }

    ColumnLayout {
        objectName: "chartsEmpty"
        visible: view.empty
        anchors.centerIn: parent
        width: Math.min(parent.width - 4 * Theme.padding, 380)
        spacing: Theme.padding / 2
        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            text: qsTr("No answers in this chat yet")
            font.pixelSize: Theme.titleFontSize + 2
            font.bold: true
            color: Theme.text
        }
        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            text: qsTr("Each answer adds a point to every chart: its speed, time to first " +
                       "token, where its experts came from and where the time went.")
            color: Theme.textMuted
        }
    }

    ScrollView {
        id: scroll
        objectName: "chartsScroll"
        anchors.fill: parent
        visible: !view.empty
        contentWidth: availableWidth

        ColumnLayout {
            width: scroll.availableWidth
            spacing: Theme.padding

            ColumnLayout {
                id: header
                Layout.margins: Theme.padding * 1.5
                Layout.bottomMargin: 0
                spacing: 2
                Label {
                    text: qsTr("Charts")
                    font.pixelSize: Theme.titleFontSize + 4
                    font.bold: true
                    color: Theme.text
                }
                Label {
                    id: summary
                    objectName: "chartsSummary"
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                    function refresh() {
                        if (!view.stats || view.turns === 0) {
                            text = qsTr("The first answer of this chat is being written.")
                            return
                        }
                        let t = (view.turns === 1 ? qsTr("1 answer")
                                 : qsTr("%1 answers, oldest first").arg(view.turns)) + " · " +
                                qsTr("mean %1 tok/s").arg(view.num(view.mean(
                                    view.stats.column("tokensPerSecond")), 1)) + " · " +
                                qsTr("mean time to first token %1 s").arg(view.num(view.mean(
                                    view.stats.column("ttft")), 2))
                        if (view.tiered)
                            t += " · " + (view.vram ? qsTr("experts ready in VRAM or RAM %1")
                                                    : qsTr("experts ready in RAM %1"))
                                         .arg(view.pct(view.mean(view.stats.column("hitRate"))))
                        text = t
                    }
                }
            }

            GridLayout {
                id: grid
                Layout.fillWidth: true
                Layout.leftMargin: Theme.padding * 1.5
                Layout.rightMargin: Theme.padding * 1.5
                Layout.bottomMargin: Theme.padding * 1.5
                columns: width >= 1100 ? 3 : width >= 540 ? 2 : 1
                rowSpacing: Theme.padding
                columnSpacing: Theme.padding
                readonly property int rowCount: Math.ceil(6 / columns)
                // Fill the window's height when it is tall enough; else scroll.
                readonly property real cardHeight: Math.max(230, (scroll.availableHeight -
                    header.height - Theme.padding * 4.5 - (rowCount - 1) * rowSpacing) / rowCount)

                ChartCard {
                    objectName: "rateCard"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    Layout.preferredHeight: grid.cardHeight
                    title: qsTr("Decode speed (tok/s)")
                    note: view.streaming && view.live.latest > 0
                          ? qsTr("now %1").arg(view.num(view.live.latest, 1))
                          : view.turns > 0 ? qsTr("last %1").arg(view.num(
                                view.stats.get(view.turns - 1).tokensPerSecond, 1)) : ""
                    legend: [{ name: qsTr("answers"), color: ink.rate },
                             { name: qsTr("answer being written"), color: ink.live, dashed: true }]
                    ThemedChart {
                        objectName: "rateChart"
                        ChartAxis { id: rateX }
                        ChartAxis { id: rateY }
                        LineSeries {
                            id: rateLine; axisX: rateX; axisY: rateY
                            color: ink.rate; width: 2.5; pointsVisible: view.turns <= 60
                        }
                        LineSeries {
                            id: liveLink; axisX: rateX; axisY: rateY
                            color: ink.live; width: 2; style: Qt.DashLine
                        }
                        ScatterSeries {
                            id: liveNow; objectName: "liveNow"; axisX: rateX; axisY: rateY
                            color: Theme.surface; borderColor: ink.live; borderWidth: 2.5
                            markerSize: 11
                        }
                    }
                }

                ChartCard {
                    objectName: "liveCard"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    Layout.preferredHeight: grid.cardHeight
                    title: view.streaming ? qsTr("This answer, live (tok/s)")
                                          : qsTr("Last answer, live (tok/s)")
                    note: qsTr("x: seconds since sent")
                    ThemedChart {
                        objectName: "liveChart"
                        ChartAxis { id: liveX; labelFormat: "%.1f" }
                        ChartAxis { id: liveY }
                        LineSeries {
                            id: liveLine; axisX: liveX; axisY: liveY
                            color: ink.live; width: 2; pointsVisible: count < 60
                        }
                    }
                    Label {
                        anchors.centerIn: parent
                        visible: view.live !== null && view.live.count === 0
                        text: qsTr("Shown while an answer is written")
                        color: Theme.textMuted
                        font.pixelSize: Theme.smallFontSize
                    }
                }

                ChartCard {
                    objectName: "ttftCard"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    Layout.preferredHeight: grid.cardHeight
                    title: qsTr("Time to first token (s)")
                    note: view.turns > 0 ? qsTr("last %1 s").arg(view.num(
                              view.stats.get(view.turns - 1).ttft, 2)) : ""
                    ThemedChart {
                        objectName: "ttftChart"
                        ChartAxis { id: ttftX }
                        ChartAxis { id: ttftY }
                        LineSeries {
                            id: ttftLine; axisX: ttftX; axisY: ttftY
                            color: ink.ttft; width: 2.5; pointsVisible: view.turns <= 60
                        }
                    }
                }

                ChartCard {
                    objectName: "hitCard"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    Layout.preferredHeight: grid.cardHeight
                    title: qsTr("Routed experts by tier (%)")
                    note: view.tiered ? (view.vram ? qsTr("last %1 in VRAM + RAM") : qsTr("last %1 in RAM"))
                                        .arg(view.pct(view.stats.get(view.turns - 1).hitRate)) : ""
                    legend: (view.vram ? [{ name: qsTr("VRAM"), color: ink.vram }] : []).concat(
                                [{ name: qsTr("pinned"), color: ink.pinned },
                                 { name: qsTr("cache"), color: ink.cache },
                                 { name: qsTr("in flight"), color: ink.inFlight },
                                 { name: qsTr("disk"), color: ink.disk }])
                    ThemedChart {
                        objectName: "hitChart"
                        ChartAxis { id: hitX }
                        ChartAxis { id: hitY }
                        LineSeries { id: vramLine; axisX: hitX; axisY: hitY; color: ink.vram; width: 2; visible: view.vram; pointsVisible: view.turns <= 60 }
                        LineSeries { id: pinnedLine; axisX: hitX; axisY: hitY; color: ink.pinned; width: 2; pointsVisible: view.turns <= 60 }
                        LineSeries { id: cacheLine; axisX: hitX; axisY: hitY; color: ink.cache; width: 2; pointsVisible: view.turns <= 60 }
                        LineSeries { id: inFlightLine; axisX: hitX; axisY: hitY; color: ink.inFlight; width: 2; pointsVisible: view.turns <= 60 }
                        LineSeries { id: diskLine; axisX: hitX; axisY: hitY; color: ink.disk; width: 2; pointsVisible: view.turns <= 60 }
                    }
                    NoTiersNote { visible: view.turns > 0 && !view.tiered }
                }

                ChartCard {
                    objectName: "mibCard"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    Layout.preferredHeight: grid.cardHeight
                    title: qsTr("Expert reads (MiB/token)")
                    note: view.tiered ? qsTr("last %1 MiB").arg(view.num(
                              view.stats.get(view.turns - 1).mibPerToken, 2)) : ""
                    ThemedChart {
                        objectName: "mibChart"
                        ChartAxis { id: mibX }
                        ChartAxis { id: mibY }
                        LineSeries {
                            id: mibLine; axisX: mibX; axisY: mibY
                            color: ink.mib; width: 2.5; pointsVisible: view.turns <= 60
                        }
                    }
                    NoTiersNote { visible: view.turns > 0 && !view.tiered }
                }

                ChartCard {
                    objectName: "splitCard"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    Layout.preferredHeight: grid.cardHeight
                    title: qsTr("Engine time split (%)")
                    note: view.turns > view.splitWindow
                          ? qsTr("last %1 answers").arg(view.splitWindow) : ""
                    legend: [{ name: qsTr("attention"), color: ink.rate },
                             { name: qsTr("expert FFN"), color: ink.pinned },
                             { name: qsTr("expert wait"), color: ink.wait },
                             { name: qsTr("sampling"), color: ink.sampling },
                             { name: qsTr("other"), color: ink.disk }]
                    ThemedChart {
                        objectName: "splitChart"
                        ChartAxis { id: splitX; gridVisible: false }
                        ChartAxis { id: splitY }
                        StackedBarSeries {
                            axisX: splitX; axisY: splitY
                            barWidth: 0.7
                            BarSet { id: splitAttention; label: qsTr("attention"); color: ink.rate; borderColor: ink.rate }
                            BarSet { id: splitFfn; label: qsTr("expert FFN"); color: ink.pinned; borderColor: ink.pinned }
                            BarSet { id: splitWait; label: qsTr("expert wait"); color: ink.wait; borderColor: ink.wait }
                            BarSet { id: splitSampling; label: qsTr("sampling"); color: ink.sampling; borderColor: ink.sampling }
                            BarSet { id: splitOther; label: qsTr("other"); color: ink.disk; borderColor: ink.disk }
                        }
                    }
                }
            }
        }
    }
}
