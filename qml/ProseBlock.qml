import QtQuick
import Colibri

// A prose block (paragraph, heading, list, quote, table) as rich text. The HTML is made by
// app/markdown from the answer with every character of the answer escaped, no <img> element and
// only http/https/mailto links, so Qt's renderer neither fetches anything nor runs the answer's
// own tags. Links open in the browser on a click only.
TextEdit {
    id: prose
    objectName: "proseBlock"
    property string html
    readonly property real naturalWidth: implicitWidth

    // Links in the theme's accent (Qt's rich text would use the palette's fixed blue). Every
    // "<a href=" in the HTML is one of ours: the answer's own "<" is always escaped.
    text: html.indexOf("<a href=") < 0 ? html
        : html.replace(/<a href=/g, "<a style=\"color:" + Theme.accent + "\" href=")
    textFormat: TextEdit.RichText
    wrapMode: TextEdit.Wrap
    readOnly: true
    selectByMouse: true
    color: Theme.text
    selectionColor: Theme.accent
    font.family: Theme.fontFamily
    font.pixelSize: Theme.fontSize
    onLinkActivated: (link) => Qt.openUrlExternally(link)

    HoverHandler {
        cursorShape: prose.hoveredLink !== "" ? Qt.PointingHandCursor : Qt.IBeamCursor
    }
}
