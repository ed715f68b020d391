import QtQuick
import Colibri

// A fenced or indented code block: a header with the language and a Copy button, then the code
// in the monospace font, selectable. Long lines wrap (no sideways scrolling inside the chat).
Rectangle {
    id: codeBlock
    objectName: "codeBlock"
    property string code
    property string language
    signal copyRequested()

    readonly property real naturalWidth: Math.max(header.implicitWidth,
                                                  codeText.implicitWidth + 2 * inset)
    readonly property int inset: 10
    implicitHeight: header.height + codeText.implicitHeight + inset
    radius: 6
    color: Theme.codeBackground
    border.color: Theme.border

    Item {
        id: header
        width: parent.width
        height: copyButton.implicitHeight + 4
        implicitWidth: languageLabel.implicitWidth + copyButton.implicitWidth + 3 * codeBlock.inset
        Text {
            id: languageLabel
            objectName: "codeLanguage"
            anchors { left: parent.left; leftMargin: codeBlock.inset; verticalCenter: parent.verticalCenter }
            text: codeBlock.language !== "" ? codeBlock.language : qsTr("code")
            color: Theme.textMuted
            font.family: Theme.monoFamily
            font.pixelSize: Theme.smallFontSize
        }
        // A plain item, not a Controls Button: a block is created while the answer streams, and
        // a styled Button costs several milliseconds to create.
        Rectangle {
            id: copyButton
            objectName: "copyCodeButton"
            property bool copied: false
            readonly property string text: copied ? qsTr("Copied") : qsTr("Copy")
            signal clicked()
            anchors { right: parent.right; rightMargin: 4; verticalCenter: parent.verticalCenter }
            implicitWidth: copyLabel.implicitWidth + 16
            implicitHeight: copyLabel.implicitHeight + 8
            width: implicitWidth
            height: implicitHeight
            radius: 4
            color: copyTap.pressed ? Theme.border : copyHover.hovered ? Theme.accentSoft : "transparent"
            Accessible.role: Accessible.Button
            Accessible.name: qsTr("Copy code")
            Accessible.onPressAction: clicked()
            Text {
                id: copyLabel
                anchors.centerIn: parent
                text: copyButton.text
                color: Theme.text
                font.family: Theme.fontFamily
                font.pixelSize: Theme.smallFontSize
            }
            HoverHandler { id: copyHover; cursorShape: Qt.PointingHandCursor }
            TapHandler { id: copyTap; onTapped: copyButton.clicked() }
            onClicked: {
                codeBlock.copyRequested()
                copied = true
                copiedTimer.restart()
            }
            Timer {
                id: copiedTimer
                interval: 1500
                onTriggered: copyButton.copied = false
            }
        }
        Rectangle {
            anchors.bottom: parent.bottom
            width: parent.width
            height: 1
            color: Theme.border
        }
    }

    TextEdit {
        id: codeText
        objectName: "codeText"
        anchors {
            top: header.bottom; left: parent.left; right: parent.right
            topMargin: codeBlock.inset / 2; leftMargin: codeBlock.inset; rightMargin: codeBlock.inset
        }
        text: codeBlock.code
        textFormat: TextEdit.PlainText
        wrapMode: TextEdit.WrapAtWordBoundaryOrAnywhere
        readOnly: true
        selectByMouse: true
        color: Theme.text
        selectionColor: Theme.accent
        font.family: Theme.monoFamily
        font.pixelSize: Theme.fontSize - 1
    }
}
