import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 5: the doctor (`coli doctor`, engine/doctor) on the model to open: every file
// present and whole, headers, tokenizer, chat template, and the read speed of its disk. Runs on
// arriving; each finding names the file and what to do. Next waits for a model that is ready.
WizardPage {
    id: page
    property QtObject wizard
    readonly property var report: wizard ? wizard.checkReport : ({})
    readonly property bool running: wizard !== null && wizard.checkState === "running"
    readonly property var findings: report.findings || []

    title: qsTr("Check the model")
    subtitle: qsTr("Every file present and whole, the headers, tokenizer and chat template, and the read speed of the disk it is on (as coli doctor checks them).")

    RowLayout {
        Layout.fillWidth: true
        spacing: Theme.padding
        BusyIndicator {
            visible: page.running
            running: page.running
            Layout.preferredHeight: 28
            Layout.preferredWidth: 28
        }
        Label {
            objectName: "wizardCheckStatus"
            Layout.fillWidth: true
            elide: Text.ElideMiddle
            text: page.wizard ? page.wizard.checkStatus : ""
            font.bold: page.wizard !== null && page.wizard.checkState === "done"
            color: page.wizard && page.wizard.checkState === "done"
                   ? (page.report.ready ? Theme.success : Theme.errorText) : Theme.textMuted
        }
        AppButton {
            objectName: "wizardCheckAgain"
            text: page.running ? qsTr("Cancel") : qsTr("Check again")
            enabled: page.wizard !== null && page.wizard.modelDir !== ""
            onClicked: page.running ? page.wizard.cancelCheck() : page.wizard.startCheck()
        }
    }

    WizardFigures {
        objectName: "wizardCheckFigures"
        visible: page.wizard !== null && page.wizard.checkState === "done"
        accentBorder: page.report.ready ? Theme.border : Theme.errorBorder
        rows: [
            [qsTr("Stored as"), page.report.kind || ""],
            [qsTr("Weight files"), page.report.weightFiles !== undefined
                 ? qsTr("%1 of %2 whole").arg(page.report.filesChecked).arg(page.report.weightFiles) : ""],
            [qsTr("Chat template"), page.report.chatTemplate === undefined ? ""
                 : page.report.chatTemplate ? qsTr("✓ loads") : qsTr("✗ missing or broken")],
            [qsTr("Disk read speed"), page.report.bandwidthText || ""],
            [qsTr("Problems"), page.report.errors !== undefined
                 ? qsTr("%1 errors, %2 warnings").arg(page.report.errors).arg(page.report.warnings) : ""]
        ]
    }

    // A Column, not the page's layout: Qt 6.4's layouts crashed when Repeater rows went away.
    Column {
        id: findingList
        objectName: "wizardFindings"
        Layout.fillWidth: true
        spacing: 8
        Repeater {
            model: page.findings
            delegate: Rectangle {
                required property var modelData
                readonly property bool isError: modelData.severity === "error"
                width: findingList.width
                implicitHeight: findingCol.implicitHeight + 2 * Theme.padding
                radius: 6
                color: isError ? Theme.errorBg : Theme.infoBg
                border.color: isError ? Theme.errorBorder : Theme.infoBorder
                Column {
                    id: findingCol
                    anchors { left: parent.left; right: parent.right; top: parent.top; margins: Theme.padding }
                    spacing: 4
                    Label {
                        width: parent.width
                        wrapMode: Text.Wrap
                        font.bold: true
                        color: parent.parent.isError ? Theme.errorText : Theme.infoText
                        text: (parent.parent.isError ? "⚠ " : "ℹ ")
                              + (parent.parent.modelData.file !== "" ? parent.parent.modelData.file + ": " : "")
                              + parent.parent.modelData.problem
                    }
                    Label {
                        width: parent.width
                        wrapMode: Text.Wrap
                        visible: text !== ""
                        color: parent.parent.isError ? Theme.errorText : Theme.infoText
                        text: parent.parent.modelData.action
                    }
                }
            }
        }
    }

    ErrorBanner {
        objectName: "wizardCheckError"
        Layout.fillWidth: true
        dismissible: false
        message: page.report.error || ""
    }
}
