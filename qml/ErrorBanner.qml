import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Shows an error in the window (not only on stderr); hidden when `message` is empty.
Rectangle {
    id: banner
    property string message: ""
    signal dismissed()

    visible: message !== ""
    implicitHeight: visible ? row.implicitHeight + 2 * Theme.padding : 0
    radius: 6
    color: Theme.errorBg
    border.color: Theme.errorBorder

    RowLayout {
        id: row
        anchors { fill: parent; margins: Theme.padding }
        spacing: Theme.padding
        Label {
            text: "⚠"
            color: Theme.errorText
            font.pixelSize: Theme.titleFontSize
            Layout.alignment: Qt.AlignTop
        }
        TextEdit {
            objectName: "errorText"
            text: banner.message
            color: Theme.errorText
            font.family: Theme.fontFamily
            font.pixelSize: Theme.fontSize
            wrapMode: TextEdit.Wrap
            readOnly: true
            selectByMouse: true
            Layout.fillWidth: true
        }
        ToolButton {
            text: "✕"
            onClicked: banner.dismissed()
            Layout.alignment: Qt.AlignTop
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Dismiss")
        }
    }
}
