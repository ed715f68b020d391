import QtQuick
import QtQuick.Controls
import Colibri

// A rounded button in the app's palette: `primary` fills it with the accent colour, otherwise it
// is outlined. Keeps the look the same whatever Qt Quick Controls style is active.
Button {
    id: control
    property bool primary: false

    font.family: Theme.fontFamily
    font.pixelSize: Theme.fontSize
    leftPadding: 14
    rightPadding: 14
    topPadding: 7
    bottomPadding: 7
    Accessible.name: text

    contentItem: Text {
        text: control.text
        font: control.font
        horizontalAlignment: Text.AlignHCenter
        verticalAlignment: Text.AlignVCenter
        elide: Text.ElideRight
        color: !control.enabled ? Theme.textMuted
             : control.primary ? Theme.accentText : Theme.text
    }
    background: Rectangle {
        implicitWidth: 64
        implicitHeight: 34
        radius: 8
        color: {
            if (!control.enabled)
                return control.primary ? Theme.accentSoft : Theme.background
            if (control.primary)
                return control.down ? Qt.darker(Theme.accent, 1.2)
                     : control.hovered ? Qt.darker(Theme.accent, 1.08) : Theme.accent
            return control.down ? Theme.border : control.hovered ? Theme.accentSoft : Theme.surface
        }
        border.color: control.visualFocus ? Theme.accent
                    : control.primary ? "transparent" : Theme.border
        border.width: control.visualFocus ? 2 : 1
    }
}
