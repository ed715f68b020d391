import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// How much of the model's context the last turn used (prompt + answer, tokens), and how many
// older messages the rolling window left out of its prompt.
RowLayout {
    id: meter
    property QtObject controller
    readonly property int used: controller ? controller.contextUsed : 0
    readonly property int length: controller ? controller.contextLength : 0
    readonly property int dropped: controller ? controller.contextDropped : 0

    spacing: 6
    visible: length > 0
    Accessible.role: Accessible.ProgressBar
    Accessible.name: qsTr("Context: %1 of %2 tokens").arg(used).arg(length)

    Label {
        text: qsTr("Context")
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
    }
    Rectangle {
        objectName: "contextBar"
        implicitWidth: 90
        implicitHeight: 6
        radius: 3
        color: Theme.background
        border.color: Theme.border
        Rectangle {
            width: meter.length > 0 ? parent.width * Math.min(1, meter.used / meter.length) : 0
            height: parent.height
            radius: 3
            color: meter.used > 0.9 * meter.length ? Theme.errorBorder : Theme.accent
        }
    }
    Label {
        objectName: "contextText"
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
        // Shortens (the whole text in the tooltip) rather than widening the toolbar. Whole pixels:
        // the layout floors its sizes, and 0.4 px short of the text's width elided it ("toke…").
        elide: Text.ElideRight
        Layout.fillWidth: true
        Layout.preferredWidth: Math.ceil(implicitWidth)
        Layout.maximumWidth: Math.ceil(implicitWidth)
        text: qsTr("%1 / %2 tokens").arg(meter.used).arg(meter.length)
              + (meter.dropped === 1 ? qsTr(" · 1 older message left out")
                 : meter.dropped > 1 ? qsTr(" · %1 older messages left out").arg(meter.dropped)
                 : "")
        HoverHandler { id: textHover }
        ToolTip.visible: textHover.hovered && truncated
        ToolTip.text: text
    }
}
