import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Tiers view: where the routed experts are now (VRAM, the RAM budget's parts, disk), how
// often each place served them, and the controls that move them (RAM budget, prefetch). Data:
// controller.tiers (TierMonitor, ~30 Hz from the engine's latest-wins tier status).
Page {
    id: view
    objectName: "tiersView"
    property QtObject controller
    readonly property QtObject tiers: controller ? controller.tiers : null
    readonly property bool live: tiers !== null && tiers.available
    readonly property bool gpu: live && tiers.vramAvailable

    // One colour per place, shared by the bar, the legend and the hot-store bar.
    function tierColor(key) {
        switch (key) {
        case "vram": return Theme.dark ? "#3fb950" : "#1a7f37"
        case "pinned": return "#8250df"
        case "cache": return Theme.accent
        case "loading": return "#d4a72c"
        case "free": return "transparent"
        case "disk": return "#8c959f"
        }
        return Theme.border
    }
    function mib(bytes) {
        if (bytes >= 1024 * 1024 * 1024) return (bytes / 1073741824).toFixed(2) + " GiB"
        return (bytes / 1048576).toFixed(bytes >= 100 * 1048576 ? 0 : 1) + " MiB"
    }
    function pct(x) { return x < 0 ? "–" : (100 * x).toFixed(1) + " %" }
    function mibFigure(x) { return x < 0 ? "–" : x.toFixed(2) + " MiB" }
    function mibNumber(x) { return x < 0 ? "–" : x.toFixed(2) }

    background: Rectangle { color: Theme.background }

    ScrollView {
        id: scroll
        anchors.fill: parent
        contentWidth: availableWidth

        ColumnLayout {
            width: scroll.availableWidth
            spacing: Theme.padding

            ColumnLayout {
                Layout.margins: Theme.padding * 1.5
                Layout.bottomMargin: 0
                spacing: 2
                Label {
                    text: qsTr("Expert tiers")
                    font.pixelSize: Theme.titleFontSize + 4
                    font.bold: true
                    color: Theme.text
                }
                Label {
                    objectName: "tiersSummary"
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                    text: !live ? qsTr("No model with streamed experts is loaded.")
                        : qsTr("%1 routed experts, read from the %2 with %3, %4 I/O.")
                              .arg(tiers.totalExperts).arg(tiers.source).arg(tiers.backend)
                              .arg(tiers.readMode)
                }
            }

            // ---- RAM: one budget, stacked ----
            Pane {
                Layout.fillWidth: true
                Layout.leftMargin: Theme.padding * 1.5
                Layout.rightMargin: Theme.padding * 1.5
                padding: Theme.padding
                background: Rectangle { color: Theme.surface; radius: 8; border.color: Theme.border }

                ColumnLayout {
                    anchors.fill: parent
                    spacing: Theme.padding * 0.75
                    RowLayout {
                        Layout.fillWidth: true
                        Label { text: qsTr("RAM"); font.bold: true; color: Theme.text }
                        Item { Layout.fillWidth: true }
                        Label {
                            objectName: "ramTotals"
                            color: Theme.textMuted
                            font.pixelSize: Theme.smallFontSize
                            text: live ? qsTr("%1 of %2 budget in use")
                                         .arg(mib(tiers.allocatedBytes)).arg(mib(tiers.budgetBytes))
                                       : ""
                        }
                    }
                    TierBar {
                        objectName: "ramBar"
                        Layout.fillWidth: true
                        implicitHeight: 26
                        emptyText: live ? "" : qsTr("no model")
                        segments: live ? tiers.ramSegments.map(s => ({ share: s.share,
                                              color: view.tierColor(s.key), name: s.key })) : []
                    }
                    TierLegend {
                        Layout.fillWidth: true
                        rows: tiers ? tiers.rows : null
                        colorFor: view.tierColor
                        formatBytes: view.mib
                        formatShare: view.pct
                    }
                    RowLayout {
                        Layout.fillWidth: true
                        spacing: Theme.padding
                        Label {
                            text: qsTr("Pinned hot-store")
                            color: Theme.text
                            Layout.preferredWidth: 150
                        }
                        TierBar {
                            objectName: "hotStoreBar"
                            Layout.fillWidth: true
                            implicitHeight: 14
                            segments: live && tiers.pinCapacity > 0
                                      ? [{ share: tiers.pinnedExperts / tiers.pinCapacity,
                                           color: view.tierColor("pinned"), name: "pinned" }] : []
                        }
                        Label {
                            color: Theme.textMuted
                            font.pixelSize: Theme.smallFontSize
                            text: live ? qsTr("%1 of %2 experts").arg(tiers.pinnedExperts)
                                                                  .arg(tiers.pinCapacity) : ""
                        }
                    }
                }
            }

            // ---- VRAM and disk ----
            RowLayout {
                Layout.fillWidth: true
                Layout.leftMargin: Theme.padding * 1.5
                Layout.rightMargin: Theme.padding * 1.5
                spacing: Theme.padding
                Pane {
                    Layout.fillWidth: true
                    Layout.fillHeight: true // as tall as the disk card beside it
                    Layout.preferredWidth: 1
                    padding: Theme.padding
                    background: Rectangle { color: Theme.surface; radius: 8; border.color: Theme.border }
                    ColumnLayout {
                        anchors.left: parent.left
                        anchors.right: parent.right
                        RowLayout {
                            Layout.fillWidth: true
                            Label { text: qsTr("VRAM"); font.bold: true; color: Theme.text }
                            Item { Layout.fillWidth: true }
                            Label {
                                objectName: "vramTotals"
                                color: Theme.textMuted
                                font.pixelSize: Theme.smallFontSize
                                text: view.gpu ? qsTr("%1 of %2").arg(mib(tiers.vramBytes))
                                                                  .arg(mib(tiers.vramBudgetBytes))
                                               : ""
                            }
                        }
                        TierBar {
                            objectName: "vramBar"
                            Layout.fillWidth: true
                            emptyText: view.gpu ? "" : qsTr("no GPU tier")
                            // Experts enter VRAM as they are routed, until its budget is full.
                            segments: view.gpu ? [{ share: tiers.vramExperts / tiers.vramCapacity,
                                                    color: view.tierColor("vram"), name: "vram" }]
                                               : []
                        }
                        Label {
                            objectName: "vramExperts"
                            visible: view.gpu
                            color: Theme.textMuted
                            font.pixelSize: Theme.smallFontSize
                            text: view.gpu ? qsTr("%1 of %2 experts").arg(tiers.vramExperts)
                                                                     .arg(tiers.vramCapacity) : ""
                        }
                    }
                }
                Pane {
                    Layout.fillWidth: true
                    Layout.fillHeight: true // the VRAM card has a line more with a GPU tier
                    Layout.preferredWidth: 1
                    padding: Theme.padding
                    background: Rectangle { color: Theme.surface; radius: 8; border.color: Theme.border }
                    ColumnLayout {
                        anchors.left: parent.left
                        anchors.right: parent.right
                        Label { text: qsTr("Disk only"); font.bold: true; color: Theme.text }
                        TierBar {
                            objectName: "diskBar"
                            Layout.fillWidth: true
                            segments: live && tiers.totalExperts > 0
                                      ? [{ share: tiers.diskExperts / tiers.totalExperts, color: view.tierColor("disk"),
                                           name: "disk" }] : []
                        }
                        DiskReads {
                            Layout.fillWidth: true
                            // Only with a mirror: one disk's bytes are the tiles' "read" figures,
                            // and the line would push the budget below a 600-pixel window.
                            visible: live && view.tiers !== null
                                     && (view.tiers.mirrorDir !== "" || view.tiers.mirrorProblem !== "")
                            tiers: view.tiers
                            formatBytes: view.mib
                            primaryColor: view.tierColor("disk")
                        }
                    }
                }
            }

            // ---- figures ----
            Flow {
                Layout.fillWidth: true
                Layout.leftMargin: Theme.padding * 1.5
                Layout.rightMargin: Theme.padding * 1.5
                spacing: Theme.padding
                FigureTile {
                    objectName: "hitRateTile"
                    // VRAM hits count as hits: the expert was ready where it was computed.
                    label: view.gpu ? qsTr("Expert hit rate (VRAM + RAM)")
                                    : qsTr("Expert hit rate (RAM)")
                    session: live ? pct(tiers.hitRateSession) : "–"
                    last: live ? pct(tiers.hitRateLast) : "–"
                }
                FigureTile {
                    // The prompt's figure apart: a prefill chunk reads each routed expert once
                    // for all its tokens, far less per token than a decode step.
                    objectName: "readPerTokenTile"
                    label: qsTr("Read per answer token")
                    session: live ? view.mibFigure(tiers.mibPerTokenSession) : "–"
                    // Short: a longer line widens the tile and wraps the row at 960 pixels.
                    hint: qsTr("last %1 · prompt %2")
                          .arg(live ? view.mibNumber(tiers.mibPerTokenLast) : "–")
                          .arg(live ? view.mibNumber(tiers.mibPerPromptTokenSession) : "–")
                }
                FigureTile {
                    label: qsTr("Waiting for reads")
                    session: live ? pct(tiers.ioWaitShare) : "–"
                    hint: qsTr("share of generating time")
                }
                FigureTile {
                    label: qsTr("Prefetch recall / precision")
                    session: live ? pct(tiers.prefetchRecall) + " / " + pct(tiers.prefetchPrecision)
                                  : "–"
                    hint: live && !tiers.prefetch ? qsTr("prefetch is off") : qsTr("this session")
                }
            }

            TierControls {
                Layout.fillWidth: true
                Layout.leftMargin: Theme.padding * 1.5
                Layout.rightMargin: Theme.padding * 1.5
                Layout.bottomMargin: Theme.padding * 1.5
                tiers: view.tiers
                formatBytes: view.mib
                formatShare: view.pct
            }
        }
    }
}
