import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 1: the model to get. A folder on this computer (a Hugging Face checkpoint or a
// colibri container), or a repo on the Hugging Face Hub (search, the token). The card sums up
// what was found: architecture, parameters, experts, size, and whether this app runs it.
WizardPage {
    id: page
    property QtObject wizard
    property QtObject appSettings
    readonly property var src: wizard ? wizard.source : ({})
    readonly property bool hasCard: src.name !== undefined
    readonly property var plan: wizard ? wizard.repoPlan : ({})

    title: qsTr("Choose a model")
    subtitle: qsTr("A Mixture-of-Experts model this app runs: a folder already on this computer, or a repo on the Hugging Face Hub.")

    // A download an earlier run left unfinished: offered for resuming.
    RowLayout {
        objectName: "wizardUnfinished"
        readonly property var rec: page.wizard ? page.wizard.unfinishedDownload : ({})
        visible: rec.repo !== undefined
        Layout.fillWidth: true
        spacing: Theme.padding
        ErrorBanner {
            Layout.fillWidth: true
            kind: "info"
            dismissible: false
            message: parent.rec.repo !== undefined
                     ? qsTr("The download of %1 into %2 is unfinished (%3).").arg(parent.rec.repo).arg(parent.rec.dir).arg(parent.rec.state)
                     : ""
        }
        AppButton {
            objectName: "wizardResumeUnfinished"
            text: qsTr("Resume it")
            primary: true
            onClicked: page.wizard.resumeUnfinished()
        }
    }
    RowLayout {
        spacing: Theme.padding
        RadioButton {
            objectName: "wizardSourceLocal"
            text: qsTr("On this computer")
            checked: page.wizard && page.wizard.sourceKind === "local"
            onToggled: if (checked) page.wizard.sourceKind = "local"
        }
        RadioButton {
            objectName: "wizardSourceHub"
            text: qsTr("On the Hugging Face Hub")
            checked: page.wizard && page.wizard.sourceKind === "hub"
            onToggled: if (checked) page.wizard.sourceKind = "hub"
        }
    }

    // ---- a folder on this computer ----
    RowLayout {
        visible: page.wizard && page.wizard.sourceKind === "local"
        Layout.fillWidth: true
        spacing: Theme.padding
        Label {
            objectName: "wizardLocalDir"
            text: page.wizard && page.wizard.localDir !== "" ? page.wizard.localDir
                                                              : qsTr("No folder chosen yet.")
            color: page.wizard && page.wizard.localDir !== "" ? Theme.text : Theme.textMuted
            elide: Text.ElideMiddle
            Layout.fillWidth: true
        }
        AppButton {
            objectName: "wizardChooseSource"
            text: qsTr("Choose folder…")
            primary: page.wizard && page.wizard.localDir === ""
            Accessible.name: qsTr("Choose the model folder on this computer")
            onClicked: browser.openAt(page.wizard.localDir !== "" ? page.wizard.localDir
                                                                  : page.appSettings.homeFolder())
        }
    }
    BusyIndicator {
        visible: running
        running: page.wizard !== null && page.wizard.busy && page.wizard.sourceKind === "local"
        Layout.preferredHeight: 32
        Layout.preferredWidth: 32
    }
    ErrorBanner {
        objectName: "wizardSourceError"
        Layout.fillWidth: true
        message: page.wizard && page.wizard.sourceKind === "local" ? page.wizard.sourceError : ""
        dismissible: false
    }
    WizardFigures {
        objectName: "wizardSourceCard"
        visible: page.hasCard && page.wizard.sourceKind === "local"
        accentBorder: page.src.supported ? Theme.border : Theme.errorBorder
        rows: [
            [qsTr("Model"), page.src.name || ""],
            [qsTr("Architecture"), page.src.architecture || ""],
            [qsTr("Parameters"), page.src.parameters || ""],
            [qsTr("Experts"), page.src.experts || ""],
            [qsTr("Size on disk"), page.src.sizeText || ""],
            [qsTr("Stored as"), page.src.isContainer ? qsTr("colibri container (%1)").arg(page.src.formats)
                                                     : qsTr("Hugging Face checkpoint (safetensors)")],
            [qsTr("Runs here"), page.src.supported ? qsTr("✓ yes") : qsTr("✗ no: %1").arg(page.src.note || "")]
        ]
    }

    // ---- a repo on the Hub ----
    ColumnLayout {
        visible: page.wizard && page.wizard.sourceKind === "hub"
        Layout.fillWidth: true
        spacing: Theme.padding
        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            TextField {
                id: query
                objectName: "wizardSearchField"
                Layout.fillWidth: true
                placeholderText: qsTr("Search, or a repo id such as allenai/OLMoE-1B-7B-0924")
                text: page.wizard ? page.wizard.searchText : ""
                enabled: page.wizard !== null && page.wizard.downloadState !== "running"
                color: Theme.text
                Accessible.name: qsTr("Search the Hub or enter a repo")
                onAccepted: if (text.trim() !== "") page.wizard.search(text)
            }
            AppButton {
                objectName: "wizardSearchButton"
                text: qsTr("Search")
                // Nothing typed, nothing to search (it did nothing and said nothing).
                enabled: query.enabled && query.text.trim() !== ""
                onClicked: page.wizard.search(query.text)
            }
        }
        ErrorBanner {
            objectName: "wizardHubStatus"
            Layout.fillWidth: true
            dismissible: false
            message: page.wizard ? page.wizard.hubStatus : ""
        }
        WizardSearchResults {
            Layout.fillWidth: true
            wizard: page.wizard
        }
        BusyIndicator {
            visible: running
            running: page.wizard !== null && page.wizard.busy
            Layout.preferredHeight: 32
            Layout.preferredWidth: 32
        }
        ErrorBanner {
            objectName: "wizardRepoError"
            Layout.fillWidth: true
            message: page.wizard ? page.wizard.sourceError : ""
            dismissible: false
        }
        WizardFigures {
            objectName: "wizardRepoCard"
            visible: page.hasCard
            accentBorder: page.src.supported ? Theme.border : Theme.errorBorder
            rows: [
                [qsTr("Repo"), page.src.name || ""],
                [qsTr("Architecture"), page.src.architecture || ""],
                [qsTr("Parameters"), page.src.parameters || ""],
                [qsTr("Files"), page.plan.fileCount ? qsTr("%1 files, %2").arg(page.plan.fileCount).arg(page.plan.totalText) : ""],
                [qsTr("Already here"), page.plan.presentText || ""],
                [qsTr("Runs here"), page.src.supported ? qsTr("✓ yes") : qsTr("✗ no: %1").arg(page.src.note || "")]
            ]
        }
        WizardTokenField {
            Layout.fillWidth: true
            token: page.wizard ? page.wizard.token : null
        }
    }

    FolderBrowser {
        id: browser
        objectName: "wizardSourceBrowser"
        appSettings: page.appSettings
        title: qsTr("Choose the model folder")
        acceptText: qsTr("Use this folder")
        onFolderAccepted: function(path) { page.wizard.chooseLocalFolder(path) }
    }
}
