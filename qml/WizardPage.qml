import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// One page of the model wizard: a title, a line that says what the page is for, and the page's
// content in a column that scrolls when the window is short.
ScrollView {
    id: page
    property string title
    property string subtitle
    default property alias content: column.data

    clip: true
    contentWidth: availableWidth
    ScrollBar.horizontal.policy: ScrollBar.AlwaysOff

    ColumnLayout {
        id: column
        width: page.availableWidth
        spacing: Theme.padding

        Label {
            text: page.title
            font.pixelSize: Theme.titleFontSize
            font.bold: true
            color: Theme.text
            Layout.fillWidth: true
            wrapMode: Text.Wrap
        }
        Label {
            visible: page.subtitle !== ""
            text: page.subtitle
            color: Theme.textMuted
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
    }
}
