import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Wizard page 6 (optional): a mirror of the hottest experts' files on a second disk, so expert
// reads are shared between two disks. Not in this build yet: the page says so; Next skips it.
WizardPage {
    id: page
    property QtObject wizard

    title: qsTr("Mirror on a second disk (optional)")
    subtitle: qsTr("Copies the files holding the most used experts to a folder on another disk; reads are then shared between the two disks. The model runs the same without it.")

    ErrorBanner {
        objectName: "wizardMirrorUnavailable"
        Layout.fillWidth: true
        kind: "info"
        dismissible: false
        message: page.wizard && page.wizard.mirrorAvailable ? ""
                 : qsTr("Mirror staging is not available in this build yet. Skip this step: Next.")
    }
}
