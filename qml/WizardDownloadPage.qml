import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 3: the download (per-file and total progress, rate, ETA, pause, resume, cancel).
// A folder already on this computer has nothing to download. Downloading from the Hub is not in
// this build yet: the page says so and shows no made-up progress.
WizardPage {
    id: page
    property QtObject wizard
    readonly property bool local: wizard !== null && wizard.sourceKind === "local"

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
    ErrorBanner {
        objectName: "wizardDownloadUnavailable"
        visible: !page.local
        Layout.fillWidth: true
        kind: "info"
        dismissible: false
        message: page.local ? "" : qsTr("Downloading in the wizard is not available in this build yet. “coli download REPO --dir DIR” downloads a repo (resumable, hash-checked); then choose that folder under On this computer.")
    }
}
