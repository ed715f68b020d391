import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Qt.labs.folderlistmodel
import Colibri

// Chooses a model folder by going into it: the list shows the folder's folders AND files (so a
// model folder shows its config.json and weights), nothing is selected by itself, and the button
// opens the folder being shown, not an entry of it. It is enabled only where config.json is.
Popup {
    id: browser
    property QtObject appSettings
    property string path: "/"
    // "mirror": choose a mirror folder (docs/mirror.md) instead: one that holds colibri-mirror.json.
    property bool mirrorMode: false
    // The wizard chooses where a model goes with it too: then any folder can be opened.
    property string title: qsTr("Add a model folder")
    property string acceptText: qsTr("Open this folder")
    property bool requireModel: true
    readonly property bool isModel: appSettings ? appSettings.isModelFolder(path) && path !== "" : false
    readonly property bool isMirror: appSettings ? appSettings.isMirrorFolder(path) : false
    readonly property bool acceptable: mirrorMode ? isMirror : (isModel || !requireModel)
    signal folderAccepted(string path)

    function openAt(dir) {
        path = dir !== "" ? dir : appSettings.homeFolder()
        open()
        list.forceActiveFocus()
    }
    function goTo(dir) { path = dir; list.currentIndex = -1 }
    function up() {
        const cut = path.lastIndexOf("/")
        goTo(cut > 0 ? path.substring(0, cut) : "/")
    }

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(parent ? parent.width - 40 : 600, 640)
    height: Math.min(parent ? parent.height - 40 : 480, 520)
    modal: true
    focus: true
    padding: Theme.padding
    background: Rectangle { color: Theme.surface; radius: Theme.radius; border.color: Theme.border }

    FolderListModel {
        id: folders
        folder: "file://" + browser.path
        showFiles: true
        showDirsFirst: true
        showHidden: false
        sortCaseSensitive: false
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 8
        Label { text: browser.mirrorMode ? qsTr("Choose a mirror folder") : browser.title; font.bold: true; font.pixelSize: Theme.titleFontSize; color: Theme.text }
        RowLayout {
            Layout.fillWidth: true
            AppButton {
                objectName: "folderUp"
                text: qsTr("↑ Up")
                Accessible.name: qsTr("Go to the folder above")
                enabled: browser.path !== "/"
                onClicked: browser.up()
            }
            TextField {
                id: pathField
                objectName: "folderPath"
                Layout.fillWidth: true
                text: browser.path
                color: Theme.text
                Accessible.name: qsTr("Folder path")
                onAccepted: browser.goTo(text)
            }
        }
        ListView {
            id: list
            objectName: "folderEntries"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: folders
            currentIndex: -1 // never preselect: the button acts on the folder shown
            keyNavigationEnabled: true
            activeFocusOnTab: true
            Accessible.name: qsTr("Contents of %1").arg(browser.path)
            ScrollBar.vertical: ScrollBar { policy: ScrollBar.AsNeeded }
            delegate: ItemDelegate {
                required property string fileName
                required property string filePath
                required property bool fileIsDir
                required property int index
                width: ListView.view.width
                height: 30
                enabled: fileIsDir // files are shown, not chosen
                highlighted: ListView.isCurrentItem
                text: (fileIsDir ? "📁  " : "📄  ") + fileName
                Accessible.name: (fileIsDir ? qsTr("Folder %1") : qsTr("File %1")).arg(fileName)
                background: Rectangle {
                    color: parent.hovered && parent.enabled ? Theme.accentSoft
                         : parent.visualFocus ? Theme.accentSoft : "transparent"
                    radius: 6
                }
                contentItem: Label {
                    text: parent.text
                    color: parent.enabled ? Theme.text : Theme.textMuted
                    elide: Text.ElideRight
                }
                onClicked: browser.goTo(filePath)
                Keys.onReturnPressed: browser.goTo(filePath)
            }
            Label {
                anchors.centerIn: parent
                visible: list.count === 0
                text: qsTr("This folder is empty.")
                color: Theme.textMuted
            }
        }
        Label {
            objectName: "folderVerdict"
            visible: browser.requireModel
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: browser.acceptable ? Theme.success : Theme.textMuted
            text: browser.mirrorMode
                  ? (browser.isMirror ? qsTr("✓ This folder holds colibri-mirror.json: a finished mirror.")
                                      : qsTr("Not a mirror folder: a mirror holds colibri-mirror.json, written when coli mirror stage finished. Go into one."))
                  : browser.isModel ? qsTr("✓ This folder holds config.json: it looks like a model folder.")
                                  : qsTr("Not a model folder: a model folder holds config.json, *.safetensors and tokenizer.json. Go into one.")
        }
        RowLayout {
            Layout.fillWidth: true
            Item { Layout.fillWidth: true }
            AppButton {
                objectName: "folderCancel"
                text: qsTr("Cancel")
                onClicked: browser.close()
            }
            AppButton {
                objectName: "folderOpen"
                text: browser.mirrorMode ? qsTr("Use this folder") : browser.acceptText
                primary: true
                enabled: browser.acceptable
                Accessible.name: browser.mirrorMode ? qsTr("Use %1 as the mirror").arg(browser.path)
                                                    : qsTr("Open %1 as the model").arg(browser.path)
                onClicked: { browser.close(); browser.folderAccepted(browser.path) }
            }
        }
    }
}
