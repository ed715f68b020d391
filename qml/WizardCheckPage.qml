import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 5: the doctor (`coli doctor`, engine/doctor) on the model to open: every file
// present and whole, headers, tokenizer, chat template, and the read speed of its disk. Runs on
// arriving; each finding names the file and what to do. Next waits for a model that is ready.
// Then the placement plan (`coli plan`) at the app's RAM budget: what stays in RAM, how many
// experts the budget holds, the expected hit rate and decode speed.
WizardPage {
    id: page
    property QtObject wizard
    readonly property var report: wizard ? wizard.checkReport : ({})
    readonly property bool running: wizard !== null && wizard.checkState === "running"
    readonly property var findings: report.findings || []

    readonly property var plan: wizard ? wizard.planReport : ({})
    readonly property bool planning: wizard !== null && wizard.planState === "running"

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

    // ---- the placement plan ----
    Label {
        visible: page.wizard !== null && page.wizard.planState !== "idle"
        text: qsTr("Placement plan")
        font.bold: true
        color: Theme.text
        Layout.topMargin: Theme.padding
    }
    RowLayout {
        visible: page.planning || (page.wizard !== null && page.wizard.planState === "cancelled")
        Layout.fillWidth: true
        spacing: Theme.padding
        BusyIndicator {
            visible: page.planning
            running: page.planning
            Layout.preferredHeight: 28
            Layout.preferredWidth: 28
        }
        Label {
            objectName: "wizardPlanStatus"
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: page.wizard ? page.wizard.planStatus : ""
        }
        AppButton {
            objectName: "wizardPlanAgain"
            text: page.planning ? qsTr("Skip") : qsTr("Plan again")
            onClicked: page.planning ? page.wizard.cancelPlan() : page.wizard.startPlan()
        }
    }
    Label {
        objectName: "wizardPlanSpeed"
        visible: page.wizard !== null && page.wizard.planState === "done"
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.text
        font.pixelSize: Theme.titleFontSize
        text: page.plan.tokensPerSecond > 0
              ? qsTr("≈ %1 tokens/s").arg(page.plan.tokensPerSecond.toFixed(page.plan.tokensPerSecond < 10 ? 2 : page.plan.tokensPerSecond < 100 ? 1 : 0))
              : qsTr("Speed unknown")
    }
    WizardFigures {
        objectName: "wizardPlanFigures"
        visible: page.wizard !== null && page.wizard.planState === "done"
        labelWidth: 170
        rows: [
            [qsTr("Dense weights"), page.plan.denseText || ""],
            [qsTr("Routed experts"), page.plan.expertsText || ""],
            [qsTr("RAM budget"), page.plan.budgetText || ""],
            [qsTr("Experts in RAM"), page.plan.fitText || ""],
            [qsTr("Expected hit rate"), page.plan.hitRateText || ""],
            [qsTr("Read per token"), page.plan.memoryPerTokenText
                 ? qsTr("%1 from memory, %2 from disk").arg(page.plan.memoryPerTokenText).arg(page.plan.diskPerTokenText) : ""],
            [qsTr("Measured speeds"), page.plan.memoryRateText
                 ? qsTr("memory %1, disk %2").arg(page.plan.memoryRateText).arg(page.plan.diskRateText) : ""],
            [qsTr("Expected speed"), page.plan.speedText || ""]
        ]
    }
    Label {
        visible: page.wizard !== null && page.wizard.planState === "done"
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
        text: qsTr("A floor: the engine's prefetch hides part of the disk time. The RAM budget is in Settings; the Tiers view shows this plan beside what is measured while you chat.")
    }
    ErrorBanner {
        objectName: "wizardPlanError"
        Layout.fillWidth: true
        dismissible: false
        kind: "info"
        message: page.plan.error || ""
    }
}
