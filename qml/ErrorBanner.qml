import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Shows an error, or a notice, in the window (not only on stderr); hidden when `message` is
// empty. kind "error": red; "info": neutral (something to know, nothing failed).
Rectangle {
    id: banner
    property string message: ""
    property string kind: "error"
    // false for a notice that states a fact while it holds (it goes when the fact does)
    property bool dismissible: true
    signal dismissed()

    readonly property bool isInfo: kind === "info"
    visible: message !== ""
    implicitHeight: visible ? row.implicitHeight + 2 * Theme.padding : 0
    radius: 6
    color: isInfo ? Theme.infoBg : Theme.errorBg
    border.color: isInfo ? Theme.infoBorder : Theme.errorBorder

    RowLayout {
        id: row
        anchors { fill: parent; margins: Theme.padding }
        spacing: Theme.padding
        Label {
            objectName: "bannerIcon"
            text: banner.isInfo ? "ℹ" : "⚠"
            color: banner.isInfo ? Theme.infoText : Theme.errorText
            font.pixelSize: Theme.titleFontSize
            Layout.alignment: Qt.AlignTop
            Accessible.ignored: true
        }
        TextEdit {
            objectName: "errorText"
            text: banner.message
            color: banner.isInfo ? Theme.infoText : Theme.errorText
            font.family: Theme.fontFamily
            font.pixelSize: Theme.fontSize
            wrapMode: TextEdit.Wrap
            readOnly: true
            selectByMouse: true
            activeFocusOnPress: false // a click selects; the keyboard stays where it was
            Layout.fillWidth: true
            Accessible.role: Accessible.StaticText
            Accessible.name: banner.message
        }
        ToolButton {
            objectName: "dismissBanner"
            visible: banner.dismissible
            text: "✕"
            onClicked: banner.dismissed()
            Layout.alignment: Qt.AlignTop
            Accessible.name: qsTr("Dismiss the message")
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Dismiss")
        }
    }
}
