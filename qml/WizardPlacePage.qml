import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 2: where the model goes. The folder (chosen with the folder browser), the free
// space of its disk and what the model needs there: the download, the container when converting,
// and a margin of max(1 GiB, 5 % of the disk's size).
WizardPage {
    id: page
    property QtObject wizard
    property QtObject appSettings
    readonly property var space: wizard ? wizard.space : ({})
    readonly property bool writesNothing: space.writesNothing === true

    title: qsTr("Where to put it")
    subtitle: writesNothing
              ? qsTr("The model runs as published from its own folder: nothing is written, so no space is needed.")
              : qsTr("The converted model goes into a new folder here. It needs room for the container and a margin of 1 GiB, or 5 % of the disk's size when that is more.")

    RowLayout {
        visible: !page.writesNothing
        Layout.fillWidth: true
        spacing: Theme.padding
        ColumnLayout {
            Layout.fillWidth: true
            spacing: 2
            Label {
                objectName: "wizardTargetDir"
                text: page.wizard && page.wizard.targetDir !== "" ? page.wizard.targetDir
                                                                   : qsTr("No folder chosen yet.")
                color: Theme.text
                elide: Text.ElideMiddle
                Layout.fillWidth: true
            }
            Label {
                text: qsTr("a new folder inside %1").arg(page.wizard ? page.wizard.targetParent : "")
                color: Theme.textMuted
                font.pixelSize: Theme.smallFontSize
                elide: Text.ElideMiddle
                Layout.fillWidth: true
            }
        }
        AppButton {
            objectName: "wizardChooseTarget"
            text: qsTr("Choose folder…")
            Accessible.name: qsTr("Choose where the model goes")
            onClicked: browser.openAt(page.wizard.targetParent !== "" ? page.wizard.targetParent
                                                                      : page.appSettings.homeFolder())
        }
    }

    BusyIndicator {
        visible: running
        running: page.wizard !== null && page.wizard.busy
        Layout.preferredHeight: 32
        Layout.preferredWidth: 32
    }

    WizardFigures {
        objectName: "wizardSpaceCard"
        visible: page.space.checked === true && !page.writesNothing
        accentBorder: page.space.fits ? Theme.border : Theme.errorBorder
        rows: [
            [qsTr("To download"), page.space.downloadText || ""],
            [qsTr("Container"), page.space.containerText || ""],
            [qsTr("Margin"), page.space.marginText || ""],
            [qsTr("Needed"), page.space.neededText || ""],
            [qsTr("Free on that disk"), page.space.freeText || ""]
        ]
    }
    Label {
        objectName: "wizardSpaceVerdict"
        visible: page.space.checked === true && !page.writesNothing && (page.space.error || "") === ""
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: page.space.fits ? Theme.success : Theme.errorText
        text: page.space.fits ? qsTr("✓ It fits.")
                              : qsTr("✗ Not enough free space: choose a folder on another disk, or free some space.")
    }
    ErrorBanner {
        objectName: "wizardSpaceError"
        Layout.fillWidth: true
        dismissible: false
        message: page.space.error || ""
    }

    FolderBrowser {
        id: browser
        objectName: "wizardTargetBrowser"
        appSettings: page.appSettings
        requireModel: false
        title: qsTr("Where the model goes")
        acceptText: qsTr("Put it here")
        onFolderAccepted: function(path) { page.wizard.chooseTargetParent(path) }
    }
}
