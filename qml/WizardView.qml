import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Get a model: the wizard's frame (WizardController, docs/app.md "The model wizard"). The steps
// in order along the top, the current page, and Back / Next with the reason Next waits.
Page {
    id: view
    property QtObject wizard
    property QtObject controller
    property QtObject appSettings
    signal chatRequested()
    signal closeRequested()

    readonly property var titles: [qsTr("Model"), qsTr("Place"), qsTr("Download"), qsTr("Convert"),
                                   qsTr("Check"), qsTr("Mirror"), qsTr("Open")]
    readonly property int page: wizard ? wizard.page : 0

    background: Rectangle { color: Theme.background }

    ColumnLayout {
        anchors { top: parent.top; bottom: parent.bottom; horizontalCenter: parent.horizontalCenter
                  margins: Theme.padding * 1.5 }
        width: Math.min(parent.width - Theme.padding * 3, 960)
        spacing: Theme.padding

        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            Label {
                text: qsTr("Get a model")
                font.pixelSize: Theme.titleFontSize
                font.bold: true
                color: Theme.text
                Layout.fillWidth: true
            }
            AppButton {
                objectName: "wizardRestart"
                text: qsTr("Start over")
                enabled: view.wizard !== null && (view.page > 0 || view.wizard.localDir !== "")
                onClicked: view.wizard.restart()
            }
            AppButton {
                objectName: "wizardClose"
                text: qsTr("Close")
                Accessible.name: qsTr("Close the wizard")
                onClicked: view.closeRequested()
            }
        }

        // The steps: done ones ticked, the current one filled.
        RowLayout {
            objectName: "wizardSteps"
            Layout.fillWidth: true
            spacing: 4
            Repeater {
                model: view.titles
                delegate: Rectangle {
                    required property string modelData
                    required property int index
                    readonly property bool current: index === view.page
                    readonly property bool done: index < view.page
                    Layout.fillWidth: true
                    Layout.preferredWidth: 1
                    implicitHeight: stepLabel.implicitHeight + 12
                    radius: 8
                    color: current ? Theme.accent : done ? Theme.accentSoft : Theme.surface
                    border.color: current ? Theme.accent : Theme.border
                    Accessible.role: Accessible.PageTab
                    Accessible.name: qsTr("Step %1 of %2: %3").arg(index + 1).arg(view.titles.length).arg(modelData)
                    Label {
                        id: stepLabel
                        anchors { left: parent.left; right: parent.right; verticalCenter: parent.verticalCenter
                                  leftMargin: 6; rightMargin: 6 }
                        horizontalAlignment: Text.AlignHCenter
                        elide: Text.ElideRight
                        text: (parent.done ? "✓ " : (parent.index + 1) + " ") + parent.modelData
                        color: parent.current ? Theme.accentText : parent.done ? Theme.accent : Theme.textMuted
                        font.pixelSize: Theme.smallFontSize
                        font.bold: parent.current
                    }
                }
            }
        }

        StackLayout {
            objectName: "wizardPages"
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: view.page
            WizardSourcePage { objectName: "wizardPage_search"; wizard: view.wizard; appSettings: view.appSettings }
            WizardPlacePage { objectName: "wizardPage_place"; wizard: view.wizard; appSettings: view.appSettings }
            WizardDownloadPage { objectName: "wizardPage_download"; wizard: view.wizard }
            WizardConvertPage { objectName: "wizardPage_convert"; wizard: view.wizard }
            WizardCheckPage { objectName: "wizardPage_check"; wizard: view.wizard }
            WizardMirrorPage { objectName: "wizardPage_mirror"; wizard: view.wizard; appSettings: view.appSettings }
            WizardOpenPage {
                objectName: "wizardPage_open"
                wizard: view.wizard
                controller: view.controller
                onChatRequested: view.chatRequested()
            }
        }

        Rectangle { Layout.fillWidth: true; implicitHeight: 1; color: Theme.border }

        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            AppButton {
                objectName: "wizardBack"
                text: qsTr("← Back")
                enabled: view.wizard !== null && view.wizard.canBack
                onClicked: view.wizard.back()
            }
            Label {
                objectName: "wizardNextHint"
                Layout.fillWidth: true
                horizontalAlignment: Text.AlignRight
                text: view.wizard ? view.wizard.nextHint : ""
                color: Theme.textMuted
                font.pixelSize: Theme.smallFontSize
                wrapMode: Text.Wrap
                maximumLineCount: 2
                elide: Text.ElideRight
            }
            AppButton {
                objectName: "wizardNext"
                visible: view.page < view.titles.length - 1
                text: view.wizard && view.wizard.pageName === "mirror" && view.wizard.mirrorState !== "done"
                      ? qsTr("Skip →") : qsTr("Next →")
                primary: true
                enabled: view.wizard !== null && view.wizard.canNext
                onClicked: view.wizard.next()
            }
        }
    }
}
