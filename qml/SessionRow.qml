import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// One saved chat in the list: its title, when it was last used and its KV cache's size on disk
// (or, while searching, a snippet of the match), and a ⋯ menu (rename, export, delete).
ItemDelegate {
    id: row
    property bool current: false
    property bool searching: false
    signal activated()
    signal renameRequested()
    signal deleteRequested()
    signal exportRequested(string format)

    objectName: "sessionRow"
    implicitHeight: col.implicitHeight + 14
    highlighted: current
    Accessible.name: model.title
    onClicked: row.activated()
    ToolTip.visible: hovered && model.kvSize !== ""
    ToolTip.delay: 800
    ToolTip.text: qsTr("KV cache %1 on disk: the next answer in this chat goes on without reading it again.")
                  .arg(model.kvSize)
    background: Rectangle {
        radius: 6
        color: row.current ? Theme.accentSoft
             : row.hovered ? Qt.rgba(Theme.accent.r, Theme.accent.g, Theme.accent.b, 0.08)
             : "transparent"
        border.color: row.visualFocus ? Theme.accent : "transparent"
    }
    contentItem: RowLayout {
        spacing: 4
        ColumnLayout {
            id: col
            Layout.fillWidth: true
            spacing: 1
            Label {
                text: model.title !== "" ? model.title : qsTr("New chat")
                color: Theme.text
                font.bold: row.current
                elide: Text.ElideRight
                Layout.fillWidth: true
            }
            Label {
                objectName: "sessionRowDetail"
                text: row.searching && model.snippet !== ""
                      ? model.snippet
                      : Qt.formatDateTime(model.updated, "d MMM yyyy, hh:mm")
                        // No break inside "KV 1.2 MiB" when the line wraps.
                        + (model.kvSize !== ""
                           ? " · " + qsTr("KV %1").arg(model.kvSize).replace(/ /g, "\u00a0") : "")
                color: Theme.textMuted
                font.pixelSize: Theme.smallFontSize
                elide: Text.ElideRight
                maximumLineCount: 2
                wrapMode: Text.Wrap
                Layout.fillWidth: true
            }
        }
        ToolButton {
            objectName: "sessionMenuButton"
            text: "⋯"
            visible: row.hovered || row.current || menu.visible
            Accessible.name: qsTr("More for “%1”").arg(model.title)
            onClicked: menu.open()
            Menu {
                id: menu
                objectName: "sessionMenu"
                // Bound here: a popup keeps the palette it was made with when the window's
                // changes (Qt 6.4), so a theme switch left it in the old theme's colours.
                palette.window: Theme.surface
                palette.windowText: Theme.text
                palette.base: Theme.field
                palette.text: Theme.text
                palette.button: Theme.field
                palette.buttonText: Theme.text
                palette.highlight: Theme.accent
                palette.highlightedText: Theme.accentText
                palette.light: Theme.surface
                palette.midlight: Theme.border
                palette.mid: Theme.border
                palette.dark: Theme.textMuted
                MenuItem { objectName: "menuRename"; text: qsTr("Rename…"); onTriggered: row.renameRequested() }
                MenuItem { objectName: "menuExportMarkdown"; text: qsTr("Export as Markdown…"); onTriggered: row.exportRequested("markdown") }
                MenuItem { objectName: "menuExportJson"; text: qsTr("Export as JSON…"); onTriggered: row.exportRequested("json") }
                MenuSeparator {}
                MenuItem { objectName: "menuDelete"; text: qsTr("Delete…"); onTriggered: row.deleteRequested() }
            }
        }
    }
}
