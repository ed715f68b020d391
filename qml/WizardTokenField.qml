import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Hugging Face token for gated or private repos (HubToken): where it comes from (HF_TOKEN,
// the token file, the keychain, or this run only), a field to type one (saved in the keychain
// where one runs) and Forget. The token itself is never shown.
Rectangle {
    id: box
    property QtObject token

    implicitHeight: col.implicitHeight + 2 * Theme.padding
    radius: Theme.radius
    color: Theme.surface
    border.color: Theme.border

    ColumnLayout {
        id: col
        anchors { fill: parent; margins: Theme.padding }
        spacing: 8
        Label {
            text: qsTr("Access token (for gated or private repos)")
            font.bold: true
            color: Theme.text
        }
        Label {
            objectName: "wizardTokenStatus"
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            text: box.token ? box.token.status : ""
            color: box.token && box.token.source === "this run only" ? Theme.errorText : Theme.textMuted
        }
        RowLayout {
            Layout.fillWidth: true
            spacing: Theme.padding
            enabled: box.token !== null && !box.token.fromEnvironment
            TextField {
                id: field
                objectName: "wizardTokenField"
                Layout.fillWidth: true
                echoMode: TextInput.Password
                placeholderText: box.token && box.token.hasToken ? qsTr("A token is set; type another to replace it")
                                                                 : qsTr("hf_…")
                color: Theme.text
                Accessible.name: qsTr("Hugging Face access token")
                onAccepted: save()
                function save() { box.token.setToken(text); text = "" }
            }
            AppButton {
                objectName: "wizardTokenSave"
                text: qsTr("Use token")
                enabled: field.text.trim() !== ""
                onClicked: field.save()
            }
            AppButton {
                objectName: "wizardTokenForget"
                text: qsTr("Forget")
                enabled: box.token !== null && box.token.hasToken
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Removes the saved token from the keychain")
                onClicked: box.token.forget()
            }
        }
    }
}
