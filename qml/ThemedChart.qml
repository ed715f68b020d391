import QtQuick
import QtCharts
import Colibri

// A ChartView in Theme's colours, filling its card: no title or legend of its own (the card has
// them), no animation (values arrive at the end of each answer and at ~30 Hz while streaming).
// Qt Charts never rescales axes for appended points: the view sets every range from the data.
ChartView {
    anchors.fill: parent
    antialiasing: true
    animationOptions: ChartView.NoAnimation
    backgroundColor: Theme.surface
    plotAreaColor: Theme.surface
    backgroundRoundness: 0
    dropShadowEnabled: false
    legend.visible: false
    margins { left: 0; right: 4; top: 4; bottom: 0 }
}
