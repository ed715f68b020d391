import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Models: the default (shipped) model and the folders loaded before (AppSettings.models), each
// with its name, path and size on disk and a Load button; "Add folder…" opens a browser that
// shows each folder's files and never selects anything by itself.
Page {
    id: page
    property QtObject controller
    property QtObject appSettings
    signal modelChosen(string path)
    signal wizardRequested()

    function focusList() { addButton.forceActiveFocus() }
    function load(path) {
        appSettings.modelChosen(path)
        controller.loadModel(path)
        page.modelChosen(path)
    }
    // The folder that holds the current model, so the browser starts next to it.
    function parentOf(dir) {
        const cut = dir.lastIndexOf("/")
        return cut > 0 ? dir.substring(0, cut) : "/"
    }

    background: Rectangle { color: Theme.background }

    ColumnLayout {
        // A readable column on wide windows, as the chat's.
        anchors { top: parent.top; bottom: parent.bottom; horizontalCenter: parent.horizontalCenter
                  margins: Theme.padding * 1.5 }
        width: Math.min(parent.width - Theme.padding * 3, 960)
        spacing: Theme.padding

        RowLayout {
            Layout.fillWidth: true
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 2
                Label { text: qsTr("Models"); font.pixelSize: Theme.titleFontSize; font.bold: true; color: Theme.text }
                Label {
                    text: qsTr("Choose the model to chat with. A model folder holds config.json, *.safetensors and tokenizer.json.")
                    color: Theme.textMuted
                    wrapMode: Text.Wrap
                    Layout.fillWidth: true
                }
            }
            AppButton {
                objectName: "getModelButton"
                text: qsTr("Get a model…")
                Accessible.name: qsTr("Get a model with the wizard: download, convert, check, open")
                ToolTip.visible: hovered
                ToolTip.text: qsTr("From the Hugging Face Hub or a folder on this computer: convert, check and open it")
                onClicked: page.wizardRequested()
            }
            AppButton {
                id: addButton
                objectName: "addFolderButton"
                text: qsTr("Add folder…")
                primary: true
                Accessible.name: qsTr("Add a model folder")
                onClicked: browser.openAt(page.controller && page.controller.modelDir !== ""
                                          ? page.parentOf(page.controller.modelDir) : "")
            }
        }

        ListView {
            id: list
            objectName: "modelList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            spacing: 8
            model: page.appSettings ? page.appSettings.models : []
            currentIndex: -1
            ScrollBar.vertical: ScrollBar { policy: ScrollBar.AsNeeded }
            delegate: Rectangle {
                id: row
                required property var modelData
                readonly property bool loaded: page.controller !== null
                                               && page.controller.modelDir === modelData.path
                objectName: "modelRow"
                width: ListView.view.width
                implicitHeight: rowLayout.implicitHeight + 2 * Theme.padding
                radius: Theme.radius
                color: Theme.surface
                border.color: loaded ? Theme.accent : Theme.border
                Accessible.role: Accessible.ListItem
                Accessible.name: modelData.name

                RowLayout {
                    id: rowLayout
                    anchors { fill: parent; margins: Theme.padding }
                    spacing: Theme.padding
                    ColumnLayout {
                        Layout.fillWidth: true
                        spacing: 2
                        RowLayout {
                            spacing: 8
                            Label { text: row.modelData.name; font.bold: true; color: Theme.text }
                            Label {
                                visible: row.modelData.isDefault
                                text: qsTr("default")
                                color: Theme.accent
                                font.pixelSize: Theme.smallFontSize
                            }
                            Label {
                                visible: row.loaded
                                text: page.controller && page.controller.loadState === "error"
                                      ? qsTr("failed to load") : qsTr("open")
                                color: page.controller && page.controller.loadState === "error"
                                       ? Theme.errorText : Theme.success
                                font.pixelSize: Theme.smallFontSize
                            }
                        }
                        Label {
                            text: row.modelData.path
                            color: Theme.textMuted
                            font.pixelSize: Theme.smallFontSize
                            elide: Text.ElideMiddle
                            Layout.fillWidth: true
                        }
                        Label {
                            objectName: "modelSize"
                            text: qsTr("%1 on disk").arg(row.modelData.sizeText)
                            color: Theme.textMuted
                            font.pixelSize: Theme.smallFontSize
                        }
                    }
                    AppButton {
                        objectName: "loadModelButton"
                        text: row.loaded ? qsTr("Reload") : qsTr("Load")
                        enabled: row.modelData.exists
                        Accessible.name: qsTr("Load %1").arg(row.modelData.name)
                        onClicked: page.load(row.modelData.path)
                    }
                    AppButton {
                        visible: !row.modelData.isDefault
                        text: qsTr("Remove")
                        Accessible.name: qsTr("Remove %1 from the list").arg(row.modelData.name)
                        ToolTip.visible: hovered
                        ToolTip.text: qsTr("Removes it from this list; the folder stays on disk")
                        onClicked: page.appSettings.forgetModel(row.modelData.path)
                    }
                }
            }
        }
    }

    FolderBrowser {
        id: browser
        objectName: "folderBrowser"
        appSettings: page.appSettings
        onFolderAccepted: function(path) { page.load(path) }
    }
}
