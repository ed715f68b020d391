import QtQuick
import QtQuick.Controls
import Colibri

// The conversation: one MessageBubble per ChatModel row. Follows the end while the user has not
// scrolled up (auto-scroll), so a streamed answer stays in view.
ListView {
    id: list
    property QtObject controller
    // True while the view sits at the end; scrolling up stops following, back down resumes.
    property bool following: true

    model: controller ? controller.chatModel : null
    clip: true
    spacing: Theme.padding
    topMargin: Theme.padding * 1.5
    bottomMargin: Theme.padding * 1.5
    boundsBehavior: Flickable.StopAtBounds

    // A readable column on wide windows: at most maxColumnWidth, centred.
    readonly property int maxColumnWidth: 900
    delegate: MessageBubble {
        width: Math.min(ListView.view.width, ListView.view.maxColumnWidth)
        x: (ListView.view.width - width) / 2
        controller: list.controller
        isLast: index === list.count - 1
    }

    onMovementEnded: following = atYEnd
    onCountChanged: if (following) Qt.callLater(list.positionViewAtEnd)
    onContentHeightChanged: if (following) Qt.callLater(list.positionViewAtEnd)

    ScrollBar.vertical: ScrollBar { policy: ScrollBar.AsNeeded }

    Label {
        anchors.centerIn: parent
        visible: list.count === 0
        horizontalAlignment: Text.AlignHCenter
        color: Theme.textMuted
        font.pixelSize: Theme.titleFontSize
        text: !list.controller ? ""
            : list.controller.loadState === "ready" ? qsTr("Ask anything. Enter sends, Shift+Enter adds a line.")
            : list.controller.loadState === "loading" ? qsTr("Loading the model…")
            : list.controller.loadState === "error" ? qsTr("The model could not be loaded.\nOpen another model folder.")
            : qsTr("Open a model folder to start.")
    }
}
