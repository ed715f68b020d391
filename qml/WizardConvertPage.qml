import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 4: convert to a colibri container (the converter in-process on the wizard's worker
// thread, with progress and cancel; formats as `coli convert` offers them), or run the checkpoint
// as published. A folder that is already a container runs as it is.
WizardPage {
    id: page
    property QtObject wizard
    readonly property var src: wizard ? wizard.source : ({})
    readonly property bool isContainer: src.isContainer === true
    readonly property bool running: wizard !== null && wizard.convertState === "running"
    readonly property bool converting: wizard !== null && wizard.convertWanted

    title: qsTr("Convert")
    subtitle: isContainer
              ? qsTr("This folder is already a colibri container (%1): it runs as it is.").arg(src.formats || "")
              : qsTr("A colibri container stores each expert in one aligned block at 4 or 8 bits, so the app reads less per token. Or run the checkpoint as published (bigger reads, widened to f32 in memory).")

    ColumnLayout {
        visible: !page.isContainer
        Layout.fillWidth: true
        spacing: 4
        RadioButton {
            objectName: "wizardConvertYes"
            text: qsTr("Convert to a colibri container (recommended)")
            checked: page.converting
            enabled: !page.running
            onToggled: if (checked) page.wizard.convertWanted = true
        }
        RadioButton {
            objectName: "wizardConvertNo"
            text: qsTr("Run as published")
            checked: !page.converting
            enabled: !page.running
            onToggled: if (checked) page.wizard.convertWanted = false
        }
    }

    GridLayout {
        visible: page.converting && !page.isContainer
        columns: 2
        columnSpacing: Theme.padding
        rowSpacing: 6
        Label { text: qsTr("Routed experts"); color: Theme.textMuted }
        ComboBox {
            objectName: "wizardExpertFormat"
            enabled: !page.running
            model: ["int4-g64", "int4-g32", "int8"]
            currentIndex: page.wizard ? Math.max(0, model.indexOf(page.wizard.expertFormat)) : 0
            onActivated: page.wizard.expertFormat = currentText
            Layout.preferredWidth: 160
        }
        Label { text: qsTr("Attention and dense weights"); color: Theme.textMuted }
        ComboBox {
            objectName: "wizardDenseFormat"
            enabled: !page.running
            model: ["int8", "bf16"]
            currentIndex: page.wizard ? Math.max(0, model.indexOf(page.wizard.denseFormat)) : 0
            onActivated: page.wizard.denseFormat = currentText
            Layout.preferredWidth: 160
        }
        Label { text: qsTr("Embeddings and LM head"); color: Theme.textMuted }
        ComboBox {
            objectName: "wizardEmbedFormat"
            enabled: !page.running
            model: ["int8", "bf16"]
            currentIndex: page.wizard ? Math.max(0, model.indexOf(page.wizard.embedFormat)) : 0
            onActivated: page.wizard.embedFormat = currentText
            Layout.preferredWidth: 160
        }
        Label { text: qsTr("Container size"); color: Theme.textMuted }
        Label {
            objectName: "wizardContainerSize"
            text: page.wizard && page.wizard.space.containerText ? page.wizard.space.containerText : "…"
            color: Theme.text
        }
        Label { text: qsTr("Goes to"); color: Theme.textMuted }
        Label {
            text: page.wizard ? page.wizard.targetDir : ""
            color: Theme.text
            elide: Text.ElideMiddle
            Layout.fillWidth: true
        }
    }

    RowLayout {
        visible: page.converting && !page.isContainer
        Layout.fillWidth: true
        spacing: Theme.padding
        AppButton {
            objectName: "wizardConvertButton"
            text: page.wizard && (page.wizard.convertState === "cancelled" || page.wizard.convertState === "failed")
                  ? qsTr("Convert again") : qsTr("Convert")
            primary: true
            enabled: !page.running && page.wizard !== null && page.wizard.convertState !== "done"
                     && page.wizard.space.fits === true
            onClicked: page.wizard.startConvert()
        }
        AppButton {
            objectName: "wizardCancelConvert"
            text: qsTr("Cancel")
            visible: page.running
            onClicked: page.wizard.cancelConvert()
        }
        ProgressBar {
            objectName: "wizardConvertProgress"
            Layout.fillWidth: true
            visible: page.wizard !== null && page.wizard.convertState !== "idle"
            value: page.wizard ? page.wizard.convertProgress : 0
        }
    }
    Label {
        objectName: "wizardConvertStatus"
        visible: text !== "" && page.converting
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        text: page.wizard ? page.wizard.convertStatus : ""
        color: page.wizard && page.wizard.convertState === "done" ? Theme.success : Theme.textMuted
    }
    ErrorBanner {
        objectName: "wizardConvertError"
        Layout.fillWidth: true
        dismissible: false
        message: page.wizard ? page.wizard.convertError : ""
    }
}
