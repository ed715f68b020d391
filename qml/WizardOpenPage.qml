import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 7: open the model (EngineController.loadModel, as the Models view does); once it
// has loaded it is in the Models list, and Start chatting goes to the chat.
WizardPage {
    id: page
    property QtObject wizard
    property QtObject controller
    signal chatRequested()
    readonly property string openState: wizard ? wizard.openState : ""

    title: qsTr("Open the model")
    subtitle: qsTr("The model is loaded and added to the Models list.")

    WizardFigures {
        rows: [
            [qsTr("Model folder"), page.wizard ? page.wizard.modelDir : ""],
            [qsTr("Stored as"), page.wizard ? (page.wizard.source.isContainer ? qsTr("colibri container")
                                              : page.wizard.convertWanted ? qsTr("colibri container (%1 experts)").arg(page.wizard.expertFormat)
                                              : qsTr("Hugging Face checkpoint, as published")) : ""],
            [qsTr("Mirror"), page.wizard && page.wizard.mirrorState === "done"
                 ? qsTr("%1 (expert reads shared with the model's disk)").arg(page.wizard.mirrorDir) : ""]
        ]
    }
    RowLayout {
        Layout.fillWidth: true
        spacing: Theme.padding
        AppButton {
            objectName: "wizardOpenButton"
            visible: page.openState !== "ready"
            text: page.openState === "error" ? qsTr("Try again") : qsTr("Open the model")
            primary: page.openState !== "ready"
            enabled: page.wizard !== null && page.wizard.modelDir !== "" && page.openState !== "loading"
                     && page.openState !== "ready"
            onClicked: page.wizard.openModel()
        }
        AppButton {
            objectName: "wizardStartChat"
            visible: page.openState === "ready"
            text: qsTr("Start chatting")
            primary: true
            onClicked: page.chatRequested()
        }
        ProgressBar {
            Layout.fillWidth: true
            visible: page.openState === "loading"
            value: page.controller ? page.controller.loadProgress : 0
        }
    }
    Label {
        objectName: "wizardOpenStatus"
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        visible: text !== ""
        text: page.openState === "ready" ? qsTr("✓ Ready. It is in the Models list.")
            : page.openState === "loading" ? qsTr("Loading…")
            : page.openState === "error" ? (page.controller ? page.controller.errorText : "")
            : ""
        color: page.openState === "ready" ? Theme.success : page.openState === "error" ? Theme.errorText : Theme.textMuted
    }
}
