import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 5: plan and doctor (`coli plan`, `coli doctor`): every file present and readable,
// the expected hit rate and tokens per second at the RAM budget. Not in this build yet: the page
// says so and shows no figures it did not measure.
WizardPage {
    id: page
    property QtObject wizard

    title: qsTr("Plan and doctor")
    subtitle: qsTr("Checks that every file of the model is present and readable, and predicts how fast it runs here: the experts that fit in RAM, the bytes read per token, the tokens per second.")

    ErrorBanner {
        objectName: "wizardChecksUnavailable"
        Layout.fillWidth: true
        kind: "info"
        dismissible: false
        message: page.wizard && page.wizard.checksAvailable ? ""
                 : qsTr("Plan and doctor are not available in this build yet: the model is not checked here. Loading it still checks its files and says what is wrong.")
    }
}
