import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// One message. User messages sit on the right as plain text; answers on the left, rendered block
// by block from their Markdown (MarkdownBlock: prose, code, reasoning), with a statistics line
// under them ("N tokens · X tok/s · TTFT Y s"; live tok/s while streaming) and the error, if any.
Item {
    id: bubble
    required property int index
    required property string role
    required property string text
    required property double tokensPerSecond
    required property double ttft
    required property int tokens
    required property bool streaming
    required property string error
    required property string stopReason
    required property QtObject blocks // answers: their MessageBlocks model; null for others
    required property double hitRate     // the turn's expert hit rate; -1: not measured
    required property double mibPerToken // MiB of experts read per decode step; -1: not measured
    required property double prefillMibPerToken // MiB read per prompt token; -1: none
    required property bool canContinue
    property QtObject controller // for the actions (copy, regenerate, continue, edit)
    property bool isLast: false
    property bool editing: false

    readonly property bool isUser: role === "user"
    readonly property real maxBubbleWidth: Math.max(200, width * 0.78)
    readonly property bool hasBlocks: !isUser && blocks !== null
    // The widest block's natural width (reported by the blocks as they lay out).
    property real blocksWidth: 0
    function updateBlocksWidth() {
        let w = 0
        for (let i = 0; i < blockRepeater.count; ++i) {
            const item = blockRepeater.itemAt(i)
            if (item) w = Math.max(w, item.naturalWidth)
        }
        blocksWidth = w
    }

    function sendEdit() {
        if (bubble.controller.editAndResend(bubble.index, editBox.text))
            bubble.editing = false
    }

    implicitHeight: column.implicitHeight
    HoverHandler { id: hover }

    function statsLine() {
        if (streaming)
            return tokensPerSecond > 0 ? qsTr("%1 tok/s…").arg(tokensPerSecond.toFixed(1))
                                       : qsTr("thinking…")
        if (tokens <= 0)
            return stopReason === "cancelled" ? qsTr("stopped") : ""
        let line = qsTr("%1 tokens · %2 tok/s · TTFT %3 s").arg(tokens)
                       .arg(tokensPerSecond.toFixed(1)).arg(ttft.toFixed(2))
        if (hitRate >= 0)
            line += qsTr(" · hit rate %1 % · %2 MiB/token").arg((100 * hitRate).toFixed(0))
                                                           .arg(mibPerToken.toFixed(2))
        if (hitRate >= 0 && prefillMibPerToken >= 0)
            line += qsTr(" · prompt %1 MiB/token").arg(prefillMibPerToken.toFixed(2))
        return stopReason === "cancelled" ? line + qsTr(" · stopped")
             : stopReason === "context full" ? line + qsTr(" · context full") : line
    }

    ColumnLayout {
        id: column
        spacing: 4
        anchors {
            left: bubble.isUser ? undefined : parent.left
            right: bubble.isUser ? parent.right : undefined
            leftMargin: Theme.padding * 1.5
            rightMargin: Theme.padding * 1.5
        }
        // As wide as the widest line it shows (body with its padding, stats, error), rounded up:
        // a fractional width would wrap the body's last glyph ("Hi" as "H / i"). While a message
        // is edited, the whole width: the edit box and its buttons are wider than a short
        // message, and a narrower column pushed them out of the window on the right.
        width: bubble.editing ? bubble.maxBubbleWidth : Math.min(bubble.maxBubbleWidth,
                        Math.ceil(Math.max((bubble.hasBlocks ? Math.max(bubble.blocksWidth, cursor.implicitWidth)
                                                             : bodyMeasure.implicitWidth) + 2 * Theme.padding,
                                           stats.visible ? statsMeasure.advanceWidth : 0,
                                           errorLabel.visible ? errorLabel.implicitWidth : 0,
                                           roleLabel.implicitWidth)) + 1)

        Label {
            id: roleLabel
            text: bubble.isUser ? qsTr("You") : bubble.role === "assistant" ? qsTr("Assistant")
                                                                           : bubble.role
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            font.bold: true
            Layout.alignment: bubble.isUser ? Qt.AlignRight : Qt.AlignLeft
        }

        Rectangle {
            objectName: bubble.isUser ? "userBubble" : "answerBubble"
            // An answer that failed before any text: the error alone, no empty box above it.
            // A message being edited: the edit box in its place.
            visible: !bubble.editing && (bubble.text !== "" || bubble.streaming || bubble.error === "")
            Layout.fillWidth: true
            implicitHeight: (bubble.hasBlocks ? blocksColumn.implicitHeight : body.implicitHeight)
                            + 2 * Theme.padding * 0.8
            radius: Theme.radius
            color: bubble.isUser ? Theme.userBubble : Theme.assistantBubble
            border.color: bubble.isUser ? "transparent" : Theme.border

            // The body's natural width (its longest line), measured apart: a wrapping
            // TextEdit's own implicitWidth changes while the column's width is being set
            // from it, a binding loop (Qt warned of one when answers were regenerated).
            Text {
                id: bodyMeasure
                visible: false
                text: body.text
                textFormat: Text.PlainText
                font: body.font
            }
            TextEdit {
                id: body
                objectName: "messageText"
                visible: !bubble.hasBlocks
                anchors {
                    left: parent.left; right: parent.right; verticalCenter: parent.verticalCenter
                    leftMargin: Theme.padding; rightMargin: Theme.padding
                }
                text: bubble.hasBlocks ? "" : bubble.text + (bubble.streaming ? " ▍" : "")
                textFormat: TextEdit.PlainText
                wrapMode: TextEdit.Wrap
                readOnly: true
                selectByMouse: true
                color: Theme.text
                font.family: Theme.fontFamily
                font.pixelSize: Theme.fontSize
            }

            Column {
                id: blocksColumn
                visible: bubble.hasBlocks
                anchors {
                    left: parent.left; right: parent.right; verticalCenter: parent.verticalCenter
                    leftMargin: Theme.padding; rightMargin: Theme.padding
                }
                spacing: Theme.padding * 0.75
                Repeater {
                    id: blockRepeater
                    model: bubble.hasBlocks ? bubble.blocks : null
                    delegate: MarkdownBlock {
                        width: blocksColumn.width
                        blocksModel: bubble.blocks
                        // Later, not now: a block's natural width can change while the
                        // column's width is being set (rich text lays out again at its new
                        // width), and a synchronous update re-entered the width binding.
                        onNaturalWidthChanged: Qt.callLater(bubble.updateBlocksWidth)
                    }
                    onItemRemoved: Qt.callLater(bubble.updateBlocksWidth)
                }
                Label {
                    id: cursor
                    visible: bubble.streaming
                    text: "▍"
                    color: Theme.text
                    font.pixelSize: Theme.fontSize
                }
            }
        }

        Label {
            id: stats
            objectName: "statsLine"
            visible: !bubble.isUser && text !== ""
            text: bubble.isUser ? "" : bubble.statsLine()
            color: Theme.textMuted
            font.pixelSize: Theme.smallFontSize
            // Wrapped inside the bubble's width: unwrapped, a long line (hit rate, MiB per token,
            // "context full") widened the answer past the window's right edge. Its natural width
            // is measured apart (statsMeasure): a wrapping label's own implicitWidth follows the
            // width it is given, a binding loop through the column's width.
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
        TextMetrics {
            id: statsMeasure
            font: stats.font
            text: stats.text
        }

        // Edit and resend: the user message in a box; Send replaces it and what followed.
        ColumnLayout {
            visible: bubble.editing
            Layout.fillWidth: true
            TextArea {
                id: editBox
                objectName: "editBox"
                Layout.fillWidth: true
                Layout.minimumWidth: 280
                wrapMode: TextArea.Wrap
                Accessible.name: qsTr("Edited message")
                // As in the composer: Enter sends, Shift+Enter adds a line; Escape cancels.
                Keys.onPressed: function(event) {
                    if ((event.key === Qt.Key_Return || event.key === Qt.Key_Enter)
                            && !(event.modifiers & Qt.ShiftModifier)) {
                        event.accepted = true
                        bubble.sendEdit()
                    } else if (event.key === Qt.Key_Escape) {
                        event.accepted = true
                        bubble.editing = false
                    }
                }
                background: Rectangle { color: Theme.surface; radius: 6; border.color: Theme.accent }
            }
            RowLayout {
                Layout.alignment: Qt.AlignRight
                AppButton {
                    objectName: "editCancel"
                    text: qsTr("Cancel")
                    onClicked: bubble.editing = false
                }
                AppButton {
                    objectName: "editSend"
                    text: qsTr("Send")
                    primary: true
                    enabled: editBox.text.trim() !== "" // as the composer's: nothing to send
                    onClicked: bubble.sendEdit()
                }
            }
        }

        MessageActions {
            objectName: "messageActions"
            Layout.alignment: bubble.isUser ? Qt.AlignRight : Qt.AlignLeft
            visible: !bubble.streaming && !bubble.editing && bubble.controller !== null
                     && (bubble.isLast || hover.hovered)
            isUser: bubble.isUser
            isLast: bubble.isLast
            canContinue: bubble.canContinue
            busy: bubble.controller !== null && bubble.controller.generating
            onCopyRequested: bubble.controller.copyToClipboard(bubble.text)
            onRegenerateRequested: bubble.controller.regenerate()
            onContinueRequested: bubble.controller.continueAnswer()
            onEditRequested: { editBox.text = bubble.text; bubble.editing = true; editBox.forceActiveFocus() }
        }

        Label {
            id: errorLabel
            objectName: "messageError"
            visible: bubble.error !== ""
            text: bubble.error
            color: Theme.errorText
            font.pixelSize: Theme.smallFontSize
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
    }
}
