import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs
import Colibri

// The main window: header (model, load state, open folder, new chat), load progress, error
// banner, the conversation and the composer. `controller` is the C++ EngineController.
ApplicationWindow {
    id: win
    objectName: "mainWindow"
    property QtObject controller

    width: 1000
    height: 720
    minimumWidth: 560
    minimumHeight: 420
    visible: true
    title: controller && controller.modelName !== "" ? "Colibri — " + controller.modelName : "Colibri"
    color: Theme.background
    font.family: Theme.fontFamily
    font.pixelSize: Theme.fontSize

    readonly property bool ready: controller !== null && controller.loadState === "ready"
    readonly property bool busy: controller !== null && controller.generating

    header: Rectangle {
        objectName: "header"
        implicitHeight: headerRow.implicitHeight + 2 * Theme.padding
        color: Theme.surface
        Rectangle {
            anchors { left: parent.left; right: parent.right; bottom: parent.bottom }
            height: 1
            color: Theme.border
        }
        RowLayout {
            id: headerRow
            anchors { fill: parent; leftMargin: Theme.padding * 1.5; rightMargin: Theme.padding * 1.5 }
            spacing: Theme.padding

            ColumnLayout {
                spacing: 2
                Layout.fillWidth: true
                Label {
                    objectName: "modelName"
                    text: controller && controller.modelName !== "" ? controller.modelName
                                                                     : qsTr("No model")
                    font.pixelSize: Theme.titleFontSize
                    font.bold: true
                    color: Theme.text
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                }
                Label {
                    text: controller ? (controller.modelInfo !== "" ? controller.modelInfo
                                                                    : controller.modelDir) : ""
                    font.pixelSize: Theme.smallFontSize
                    color: Theme.textMuted
                    elide: Text.ElideMiddle
                    Layout.fillWidth: true
                }
            }
            StateChip {
                objectName: "loadStateChip"
                loadState: controller ? controller.loadState : "empty"
                progress: controller ? controller.loadProgress : 0
            }
            AppButton {
                objectName: "openButton"
                text: qsTr("Open model folder…")
                onClicked: folderDialog.open()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Choose a Hugging Face model folder (Ctrl+O)")
            }
            AppButton {
                objectName: "newChatButton"
                text: qsTr("New chat")
                enabled: controller !== null
                onClicked: win.newChat()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Start over (Ctrl+N)")
            }
        }
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        ProgressBar {
            objectName: "loadProgress"
            Layout.fillWidth: true
            visible: controller !== null && controller.loadState === "loading"
            value: controller ? controller.loadProgress : 0
        }

        ErrorBanner {
            objectName: "errorBanner"
            Layout.fillWidth: true
            Layout.margins: Theme.padding
            Layout.bottomMargin: 0
            message: controller ? controller.errorText : ""
            onDismissed: controller.clearError()
        }

        ChatView {
            id: chatView
            objectName: "chatView"
            Layout.fillWidth: true
            Layout.fillHeight: true
            controller: win.controller
        }

        Composer {
            id: composer
            objectName: "composer"
            Layout.fillWidth: true
            ready: win.ready
            busy: win.busy
            onSendRequested: function(text) {
                if (controller.send(text))
                    composer.clear()
            }
            onStopRequested: win.stop()
        }
    }

    function newChat() {
        controller.newChat()
        composer.focusInput()
    }
    function stop() {
        controller.stop()
        composer.focusInput() // the Stop button took the focus: typing goes on in the composer
    }
    // The folder that holds the current model, so the dialog lists the model itself.
    function parentFolderUrl() {
        if (!controller || controller.modelDir === "")
            return ""
        const dir = controller.modelDir
        const cut = dir.lastIndexOf("/")
        return "file://" + (cut > 0 ? dir.substring(0, cut) : "/")
    }

    FolderDialog {
        id: folderDialog
        objectName: "folderDialog"
        title: qsTr("Open a model folder")
        currentFolder: win.parentFolderUrl()
        onAccepted: {
            controller.openModelFolder(selectedFolder)
            composer.focusInput()
        }
        onRejected: composer.focusInput()
    }

    Connections {
        target: controller
        function onAnswerFinished(row) { composer.focusInput() }
    }

    Shortcut { sequence: "Ctrl+O"; onActivated: folderDialog.open() }
    Shortcut { sequence: "Ctrl+N"; onActivated: win.newChat() }
    Shortcut { sequence: "Escape"; enabled: win.busy; onActivated: win.stop() }
    Shortcut { sequence: StandardKey.Quit; onActivated: Qt.quit() }

    Component.onCompleted: composer.focusInput()
}
