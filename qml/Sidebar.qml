import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The list of views on the left: one button per view (icon, title; the shortcut in its tooltip).
// The last view (Settings) sits at the bottom. Tab reaches each button; Space/Enter opens it.
Rectangle {
    id: bar
    property var views: []
    property int currentIndex: 0
    signal activated(string name)

    implicitWidth: 118
    color: Theme.sidebar
    Rectangle {
        anchors { top: parent.top; bottom: parent.bottom; right: parent.right }
        width: 1
        color: Theme.border
    }

    component ViewButton: AbstractButton {
        id: button
        required property var view
        required property int viewIndex
        readonly property bool current: bar.currentIndex === viewIndex
        objectName: "sidebar_" + view.name
        Layout.fillWidth: true
        Layout.leftMargin: 8
        Layout.rightMargin: 8
        implicitHeight: 38
        focusPolicy: Qt.StrongFocus
        text: view.title
        Accessible.role: Accessible.PageTab
        Accessible.name: view.title
        Accessible.description: qsTr("Shortcut: %1").arg(view.key)
        ToolTip.visible: hovered
        ToolTip.delay: 600
        ToolTip.text: qsTr("%1 (%2)").arg(view.title).arg(view.key)
        onClicked: bar.activated(view.name)
        background: Rectangle {
            radius: 8
            color: button.current ? Theme.accentSoft
                 : button.hovered ? Qt.rgba(Theme.accent.r, Theme.accent.g, Theme.accent.b, 0.08)
                 : "transparent"
            border.color: button.visualFocus ? Theme.accent : "transparent"
            border.width: 2
        }
        contentItem: RowLayout {
            spacing: 8
            Label {
                text: button.view.icon
                color: button.current ? Theme.accent : Theme.textMuted
                font.pixelSize: 16
                Layout.preferredWidth: 20
                horizontalAlignment: Text.AlignHCenter
                leftPadding: 4
            }
            Label {
                text: button.view.title
                color: button.current ? Theme.text : Theme.textMuted
                font.bold: button.current
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
        }
    }

    ColumnLayout {
        anchors { fill: parent; topMargin: 10; bottomMargin: 10 }
        spacing: 4
        Repeater {
            model: bar.views.length - 1
            delegate: ViewButton {
                required property int index
                view: bar.views[index]
                viewIndex: index
            }
        }
        Item { Layout.fillHeight: true }
        ViewButton {
            view: bar.views.length > 0 ? bar.views[bar.views.length - 1] : ({ name: "", title: "", icon: "", key: "" })
            viewIndex: bar.views.length - 1
        }
    }
}
