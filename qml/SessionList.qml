import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs
import Colibri

// The saved chats beside the conversation (SessionManager + SessionListModel): search, new chat,
// open by a click, and per chat (its ⋯ menu) rename, export as Markdown or JSON, delete (asks
// first). Titles come from the first message; a search shows the matching chats with a snippet.
Rectangle {
    id: panel
    property QtObject sessions
    readonly property QtObject list: sessions ? sessions.sessions : null
    signal newChatRequested()
    signal opened()

    implicitWidth: 230
    color: Theme.sidebar
    Rectangle {
        anchors { top: parent.top; bottom: parent.bottom; right: parent.right }
        width: 1
        color: Theme.border
    }

    function startRename(id, title) {
        renameDialog.sessionId = id
        renameField.text = title
        renameDialog.open()
    }
    function askDelete(id, title) {
        deleteDialog.sessionId = id
        deleteDialog.chatTitle = title
        deleteDialog.open()
    }
    // The dialog starts in the user's documents folder (home where there is none) with a file
    // named after the chat (it started at "/", where a user cannot write, with the name alone).
    function askExport(id, title, format) {
        exportDialog.sessionId = id
        exportDialog.format = format
        const folder = panel.sessions.exportFolder()
        exportDialog.currentFolder = folder
        exportDialog.selectedFile = panel.sessions.exportFile(title, format)
        exportDialog.open()
    }

    ColumnLayout {
        anchors { fill: parent; margins: 8; rightMargin: 9 }
        spacing: 6

        RowLayout {
            Layout.fillWidth: true
            spacing: 6
            TextField {
                id: search
                objectName: "sessionSearch"
                Layout.fillWidth: true
                placeholderText: qsTr("Search chats")
                Accessible.name: qsTr("Search the saved chats")
                text: panel.sessions ? panel.sessions.searchText : ""
                onTextEdited: if (panel.sessions) panel.sessions.searchText = text
                Keys.onEscapePressed: { text = ""; if (panel.sessions) panel.sessions.searchText = "" }
            }
            ToolButton {
                objectName: "sessionNew"
                text: "+"
                font.pixelSize: Theme.titleFontSize
                Accessible.name: qsTr("New chat")
                ToolTip.visible: hovered
                ToolTip.text: qsTr("New chat (Ctrl+N)")
                onClicked: panel.newChatRequested()
            }
        }

        ListView {
            id: listView
            objectName: "sessionListView"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            spacing: 2
            model: panel.list
            ScrollBar.vertical: ScrollBar {}
            Accessible.role: Accessible.List
            Accessible.name: qsTr("Saved chats")

            delegate: SessionRow {
                width: listView.width
                current: panel.sessions !== null && panel.sessions.currentSessionId === model.sessionId
                searching: panel.sessions !== null && panel.sessions.searchText !== ""
                onActivated: { panel.sessions.openSession(model.sessionId); panel.opened() }
                onRenameRequested: panel.startRename(model.sessionId, model.title)
                onDeleteRequested: panel.askDelete(model.sessionId, model.title)
                onExportRequested: function(format) { panel.askExport(model.sessionId, model.title, format) }
            }

            Label {
                anchors.centerIn: parent
                width: parent.width - 20
                visible: listView.count === 0
                horizontalAlignment: Text.AlignHCenter
                wrapMode: Text.Wrap
                color: Theme.textMuted
                font.pixelSize: Theme.smallFontSize
                text: panel.sessions && panel.sessions.searchText !== ""
                      ? qsTr("No chat matches “%1”.").arg(panel.sessions.searchText)
                      : qsTr("Your chats appear here.")
            }
        }
    }

    Dialog {
        id: renameDialog
        objectName: "renameDialog"
        property var sessionId: 0
        title: qsTr("Rename chat")
        modal: true
        anchors.centerIn: Overlay.overlay
        standardButtons: Dialog.Ok | Dialog.Cancel
        onAboutToShow: renameField.forceActiveFocus()
        onAccepted: panel.sessions.renameSession(sessionId, renameField.text)
        TextField {
            id: renameField
            objectName: "renameField"
            implicitWidth: 320
            Accessible.name: qsTr("New title")
            onAccepted: renameDialog.accept()
        }
    }

    Dialog {
        id: deleteDialog
        objectName: "deleteDialog"
        property var sessionId: 0
        property string chatTitle: ""
        title: qsTr("Delete chat?")
        modal: true
        anchors.centerIn: Overlay.overlay
        standardButtons: Dialog.Yes | Dialog.Cancel
        onAccepted: panel.sessions.deleteSession(sessionId)
        Label {
            width: 360
            wrapMode: Text.Wrap
            text: qsTr("“%1” and all its messages are deleted from this computer. This cannot be undone.")
                  .arg(deleteDialog.chatTitle)
        }
    }

    FileDialog {
        id: exportDialog
        property var sessionId: 0
        property string format: "markdown"
        title: format === "json" ? qsTr("Export chat as JSON") : qsTr("Export chat as Markdown")
        fileMode: FileDialog.SaveFile
        acceptLabel: qsTr("Export")
        nameFilters: format === "json" ? [qsTr("JSON files (*.json)")] : [qsTr("Markdown files (*.md)")]
        onAccepted: panel.sessions.exportSession(sessionId, selectedFile, format)
    }
}
