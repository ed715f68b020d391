import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 3: the download (per-file and total progress, rate, ETA, pause, resume, cancel) on
// the wizard's worker thread, into the chosen folder. A folder already on this computer has
// nothing to download.
WizardPage {
    id: page
    property QtObject wizard
    readonly property bool local: wizard !== null && wizard.sourceKind === "local"
    readonly property string dlState: wizard ? wizard.downloadState : "idle"
    readonly property bool running: dlState === "running"
    readonly property var plan: wizard ? wizard.repoPlan : ({})

    title: qsTr("Download")
    subtitle: local ? qsTr("The files are already on this computer: nothing to download.")
                    : qsTr("Each file is downloaded to a .part file, resumed after an interruption and checked against the Hub's hash before it is kept.")

    WizardFigures {
        visible: page.local
        rows: [
            [qsTr("Folder"), page.wizard ? page.wizard.localDir : ""],
            [qsTr("Size on disk"), page.wizard && page.wizard.source.sizeText ? page.wizard.source.sizeText : ""]
        ]
    }

    // ---- a repo on the Hub ----
    WizardFigures {
        objectName: "wizardDownloadFigures"
        visible: !page.local
        rows: [
            [qsTr("Repo"), page.wizard ? page.wizard.repoId : ""],
            [qsTr("Commit"), page.plan.commit ? page.plan.commit.substring(0, 12) : ""],
            [qsTr("Files"), page.plan.fileCount ? qsTr("%1 files, %2").arg(page.plan.fileCount).arg(page.plan.totalText) : ""],
            [qsTr("Into"), page.wizard ? page.wizard.downloadDir : ""]
        ]
    }
    RowLayout {
        visible: !page.local
        Layout.fillWidth: true
        spacing: Theme.padding
        AppButton {
            objectName: "wizardDownloadButton"
            text: page.dlState === "paused" || page.dlState === "failed" ? qsTr("Resume")
                  : page.dlState === "cancelled" ? qsTr("Download again") : qsTr("Download")
            primary: true
            visible: !page.running && page.dlState !== "done"
            onClicked: page.wizard.startDownload()
        }
        AppButton {
            objectName: "wizardPauseDownload"
            text: qsTr("Pause")
            visible: page.running
            onClicked: page.wizard.pauseDownload()
        }
        AppButton {
            objectName: "wizardCancelDownload"
            text: qsTr("Cancel")
            visible: page.running || page.dlState === "paused"
            Accessible.name: qsTr("Cancel the download and delete its partial files")
            onClicked: page.wizard.cancelDownload()
        }
        Item { Layout.fillWidth: true }
    }
    ColumnLayout {
        visible: !page.local && page.dlState !== "idle"
        Layout.fillWidth: true
        spacing: 4
        Label {
            text: qsTr("Total")
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
        }
        ProgressBar {
            objectName: "wizardDownloadProgress"
            Layout.fillWidth: true
            value: page.wizard ? page.wizard.downloadProgress : 0
        }
        Label {
            objectName: "wizardDownloadStatus"
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            text: page.wizard ? page.wizard.downloadStatus : ""
            color: page.dlState === "done" ? Theme.success : Theme.textMuted
        }
        Label {
            objectName: "wizardDownloadFile"
            visible: page.running && text !== ""
            Layout.topMargin: 6
            Layout.fillWidth: true
            elide: Text.ElideMiddle
            text: page.wizard ? page.wizard.downloadFile : ""
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
        }
        ProgressBar {
            objectName: "wizardFileProgress"
            visible: page.running
            Layout.fillWidth: true
            value: page.wizard ? page.wizard.fileProgress : 0
        }
    }
    ErrorBanner {
        objectName: "wizardDownloadError"
        Layout.fillWidth: true
        dismissible: false
        message: page.wizard ? page.wizard.downloadError : ""
    }
}
