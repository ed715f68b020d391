import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 6 (optional): a mirror of the most used experts' files on a folder on another disk
// (`coli mirror plan` and `stage`, docs/mirror.md). Choosing the folder shows the plan: what fits
// in its free space minus the reserve, ranked by learned heat per byte; Stage copies with
// progress (crash-safe, resumable: Cancel keeps finished files). Next skips it at any time.
WizardPage {
    id: page
    property QtObject wizard
    property QtObject appSettings
    readonly property var plan: wizard ? wizard.mirrorPlan : ({})
    readonly property bool staging: wizard !== null && wizard.mirrorState === "running"
    readonly property bool planned: plan.checked === true && (plan.error || "") === ""

    title: qsTr("Mirror on a second disk (optional)")
    subtitle: qsTr("Copies the files holding the most used experts to a folder on another disk; expert reads are then shared between the two disks. The tokens are the same with or without it. Skip this step with Next.")

    RowLayout {
        Layout.fillWidth: true
        spacing: Theme.padding
        Label {
            objectName: "wizardMirrorDir"
            Layout.fillWidth: true
            elide: Text.ElideMiddle
            color: page.wizard && page.wizard.mirrorDir !== "" ? Theme.text : Theme.textMuted
            text: page.wizard && page.wizard.mirrorDir !== "" ? page.wizard.mirrorDir
                                                               : qsTr("No mirror folder chosen.")
        }
        AppButton {
            objectName: "wizardChooseMirror"
            text: qsTr("Choose folder…")
            enabled: !page.staging
            Accessible.name: qsTr("Choose the mirror folder")
            onClicked: browser.openAt(page.wizard.mirrorDir !== "" ? page.wizard.mirrorDir
                                                                   : page.appSettings.homeFolder())
        }
    }

    BusyIndicator {
        visible: running
        running: page.wizard !== null && page.wizard.busy && !page.staging
        Layout.preferredHeight: 32
        Layout.preferredWidth: 32
    }

    ErrorBanner {
        objectName: "wizardMirrorSameDisk"
        Layout.fillWidth: true
        kind: "info"
        dismissible: false
        message: page.planned && page.plan.sameDisk
                 ? qsTr("This folder is on the same disk as the model: a mirror there adds no read speed. Pick a folder on another disk.")
                 : ""
    }

    WizardFigures {
        objectName: "wizardMirrorPlan"
        visible: page.planned
        labelWidth: 170
        rows: [
            [qsTr("Room for the mirror"), page.plan.roomText
                 ? qsTr("%1 (%2; %3 kept free)").arg(page.plan.roomText).arg(page.plan.freeText).arg(page.plan.reserveText) : ""],
            [qsTr("Ranked"), page.plan.rankingText || ""],
            [qsTr("Mirror"), page.plan.mirrorText
                 ? qsTr("%1 (%2 to copy)").arg(page.plan.mirrorText).arg(page.plan.copyText) : ""],
            [qsTr("Covers"), page.plan.coveredText || ""]
        ]
    }

    RowLayout {
        visible: page.planned
        Layout.fillWidth: true
        spacing: Theme.padding
        AppButton {
            objectName: "wizardStageMirror"
            text: page.staging ? qsTr("Cancel") : page.plan.staged ? qsTr("Check the copies") : qsTr("Stage the mirror")
            enabled: page.staging || (page.plan.fileCount || 0) > 0
            onClicked: page.staging ? page.wizard.cancelMirror() : page.wizard.startMirror()
        }
        Label {
            visible: !page.staging && (page.plan.fileCount || 0) === 0
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.errorText
            text: qsTr("No expert file fits there: choose a folder with more free space.")
        }
    }
    ProgressBar {
        objectName: "wizardMirrorProgress"
        visible: page.wizard !== null && page.wizard.mirrorState !== "idle"
        Layout.fillWidth: true
        from: 0
        to: 1
        value: page.wizard ? page.wizard.mirrorProgress : 0
    }
    Label {
        objectName: "wizardMirrorStatus"
        visible: text !== ""
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: page.wizard && page.wizard.mirrorState === "done" ? Theme.success : Theme.textMuted
        text: page.wizard ? page.wizard.mirrorStatus : ""
    }
    ErrorBanner {
        objectName: "wizardMirrorError"
        Layout.fillWidth: true
        dismissible: false
        message: (page.plan.error || "") !== "" ? page.plan.error
                                                 : page.wizard ? page.wizard.mirrorError : ""
    }

    // The plan's files, best first (a Column, not a layout: see WizardFigures).
    Column {
        id: fileList
        objectName: "wizardMirrorFiles"
        visible: page.planned
        Layout.fillWidth: true
        spacing: 2
        Repeater {
            model: (page.plan.files || []).slice(0, 12)
            delegate: Row {
                required property var modelData
                width: fileList.width
                spacing: Theme.padding
                Label {
                    width: parent.width - 260
                    text: parent.modelData.path
                    elide: Text.ElideMiddle
                    color: Theme.text
                    font.pixelSize: Theme.smallFontSize
                }
                Label {
                    width: 90
                    horizontalAlignment: Text.AlignRight
                    text: parent.modelData.sizeText
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                }
                Label {
                    width: 150
                    text: parent.modelData.choice
                    elide: Text.ElideRight
                    color: parent.modelData.choice === "copy" || parent.modelData.choice === "staged"
                           ? Theme.success : Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                }
            }
        }
        Label {
            visible: (page.plan.files || []).length > 12
            text: qsTr("… and %1 more files").arg((page.plan.files || []).length - 12)
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
        }
    }

    FolderBrowser {
        id: browser
        objectName: "wizardMirrorBrowser"
        appSettings: page.appSettings
        requireModel: false
        title: qsTr("The mirror folder (on another disk)")
        acceptText: qsTr("Mirror here")
        onFolderAccepted: function(path) { page.wizard.chooseMirrorFolder(path) }
    }
}
