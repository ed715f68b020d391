import QtQuick
import Colibri

// One block of an answer (a row of its MessageBlocks model): prose, code or the model's
// reasoning. Each block is its own item, so while an answer streams only the last one changes
// and lays out again.
Item {
    id: block
    required property int index
    required property string kind
    required property string text
    required property string html
    required property string language
    required property bool open
    required property double thinkSeconds
    property QtObject blocksModel // the MessageBlocks model, for Copy

    // The width the block would like (longest line), for the bubble's size.
    readonly property real naturalWidth: loader.item ? loader.item.naturalWidth : 0
    implicitHeight: loader.item ? loader.item.implicitHeight : 0

    Loader {
        id: loader
        width: parent.width
        sourceComponent: block.kind === "code" ? codeComponent
                       : block.kind === "think" ? thinkComponent : proseComponent
    }
    Component {
        id: proseComponent
        ProseBlock { html: block.html }
    }
    Component {
        id: codeComponent
        CodeBlock {
            code: block.text
            language: block.language
            onCopyRequested: if (block.blocksModel) block.blocksModel.copyToClipboard(block.index)
        }
    }
    Component {
        id: thinkComponent
        ThinkBlock {
            text: block.text
            open: block.open
            seconds: block.thinkSeconds
        }
    }
}
