import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The chat's own settings (a side panel of the Chat view): the system prompt and the sampling
// values that override the app's (Settings view) for this chat, and a fixed seed. Saved with the
// chat (SessionManager.setChatSettings); an empty box means "the app's value".
Pane {
    id: panel
    property QtObject sessions
    readonly property var current: sessions ? sessions.chatSettings : ({})
    signal closeRequested()

    implicitWidth: 280
    padding: Theme.padding
    background: Rectangle {
        color: Theme.sidebar
        Rectangle { anchors { top: parent.top; bottom: parent.bottom; left: parent.left }
                    width: 1; color: Theme.border }
    }

    function numberOrEmpty(key) {
        return current[key] !== undefined ? String(current[key]) : ""
    }
    function apply() {
        const s = { systemPrompt: systemPrompt.text }
        const put = function(key, field) {
            const t = field.text.trim()
            if (t !== "" && !isNaN(Number(t))) s[key] = Number(t)
        }
        put("temperature", temperature)
        put("topK", topK)
        put("topP", topP)
        put("minP", minP)
        put("repeatPenalty", repeatPenalty)
        put("maxNewTokens", maxNewTokens)
        if (fixedSeed.checked && /^\d+$/.test(seed.text.trim())) s.seed = seed.text.trim()
        sessions.setChatSettings(s)
    }
    // Reloads the boxes when another chat is shown.
    onCurrentChanged: {
        systemPrompt.text = current.systemPrompt !== undefined ? current.systemPrompt : ""
        temperature.text = numberOrEmpty("temperature")
        topK.text = numberOrEmpty("topK")
        topP.text = numberOrEmpty("topP")
        minP.text = numberOrEmpty("minP")
        repeatPenalty.text = numberOrEmpty("repeatPenalty")
        maxNewTokens.text = numberOrEmpty("maxNewTokens")
        fixedSeed.checked = current.seed !== undefined
        seed.text = current.seed !== undefined ? current.seed : ""
    }

    component NumberRow: RowLayout {
        property alias label: rowLabel.text
        property alias field: rowField
        property alias text: rowField.text
        property string hint: ""
        Layout.fillWidth: true
        Label { id: rowLabel; color: Theme.text; Layout.fillWidth: true }
        TextField {
            id: rowField
            implicitWidth: 90
            horizontalAlignment: Text.AlignRight
            placeholderText: qsTr("app's")
            Accessible.name: rowLabel.text
            ToolTip.visible: hovered && parent.hint !== ""
            ToolTip.text: parent.hint
            onEditingFinished: panel.apply()
        }
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 8
        RowLayout {
            Layout.fillWidth: true
            Label { text: qsTr("This chat"); font.bold: true; color: Theme.text; Layout.fillWidth: true }
            ToolButton {
                text: "✕"
                Accessible.name: qsTr("Close the chat settings")
                onClicked: panel.closeRequested()
            }
        }
        Label { text: qsTr("System prompt"); color: Theme.textMuted; font.pixelSize: Theme.smallFontSize }
        ScrollView {
            Layout.fillWidth: true
            Layout.preferredHeight: 96
            TextArea {
                id: systemPrompt
                objectName: "systemPromptField"
                wrapMode: TextArea.Wrap
                placeholderText: qsTr("None")
                Accessible.name: qsTr("System prompt")
                background: Rectangle { color: Theme.surface; radius: 6; border.color: Theme.border }
                onActiveFocusChanged: if (!activeFocus) panel.apply()
            }
        }
        Label {
            text: qsTr("Sampling (empty: the app's setting)")
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            Layout.topMargin: 4
        }
        NumberRow { id: temperatureRow; label: qsTr("Temperature"); hint: qsTr("0 = always the most likely token") }
        NumberRow { id: topKRow; label: qsTr("Top-k"); hint: qsTr("0 = off") }
        NumberRow { id: topPRow; label: qsTr("Top-p"); hint: qsTr("1 = off") }
        NumberRow { id: minPRow; label: qsTr("Min-p"); hint: qsTr("0 = off") }
        NumberRow { id: repeatRow; label: qsTr("Repeat penalty"); hint: qsTr("1 = off") }
        NumberRow { id: maxRow; label: qsTr("Max new tokens") }
        RowLayout {
            Layout.fillWidth: true
            CheckBox {
                id: fixedSeed
                objectName: "fixedSeedBox"
                text: qsTr("Fixed seed")
                Accessible.name: qsTr("Use a fixed seed for every answer of this chat")
                onToggled: panel.apply()
            }
            TextField {
                id: seed
                enabled: fixedSeed.checked
                Layout.fillWidth: true
                horizontalAlignment: Text.AlignRight
                validator: RegularExpressionValidator { regularExpression: /\d{0,20}/ }
                Accessible.name: qsTr("Seed")
                onEditingFinished: panel.apply()
            }
        }
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            text: fixedSeed.checked ? qsTr("Every answer, Regenerate too, uses this seed.")
                                    : qsTr("Regenerate draws a new seed.")
        }
        Item { Layout.fillHeight: true }
    }
    // Short names for the rows' fields (apply() reads them).
    readonly property alias temperature: temperatureRow.field
    readonly property alias topK: topKRow.field
    readonly property alias topP: topPRow.field
    readonly property alias minP: minPRow.field
    readonly property alias repeatPenalty: repeatRow.field
    readonly property alias maxNewTokens: maxRow.field
}
