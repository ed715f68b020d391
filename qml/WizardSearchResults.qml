import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Hub's search results on the wizard's first page: one row per repo (most downloaded first)
// with its architecture, parameters, downloads and whether this app runs it (why not, when not).
// Clicking a row chooses that repo (WizardController.chooseRepo).
ListView {
    id: list
    property QtObject wizard
    objectName: "wizardSearchResults"
    clip: true
    spacing: 2
    // From the count, not contentHeight: a ListView of height 0 makes no delegate to measure.
    implicitHeight: Math.min(count, 6) * 52 - spacing
    visible: count > 0
    model: wizard ? wizard.searchResults : []
    ScrollBar.vertical: ScrollBar {}

    delegate: Rectangle {
        id: row
        required property var modelData
        required property int index
        readonly property bool chosen: list.wizard && list.wizard.repoId === modelData.repo
        objectName: "wizardSearchRow" + index
        width: list.width
        height: 50
        radius: 6
        color: chosen ? Theme.accentSoft : hover.hovered ? Theme.field : Theme.surface
        border.color: chosen ? Theme.accent : Theme.border
        Accessible.role: Accessible.Button
        Accessible.name: modelData.repo

        HoverHandler { id: hover }
        TapHandler { onTapped: list.wizard.chooseRepo(row.modelData.repo) }

        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: Theme.padding
            anchors.rightMargin: Theme.padding
            spacing: Theme.padding
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 2
                Label {
                    text: row.modelData.repo
                    font.bold: true
                    color: Theme.text
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                }
                Label {
                    text: [row.modelData.architecture || qsTr("architecture not given"),
                           row.modelData.parameters ? qsTr("%1 parameters").arg(row.modelData.parameters) : "",
                           qsTr("%L1 downloads").arg(row.modelData.downloads)]
                          .filter(function(s) { return s !== "" }).join("  ·  ")
                    color: Theme.textMuted
                    font.pixelSize: Theme.smallFontSize
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                }
            }
            Label {
                objectName: "wizardSearchFlag" + row.index
                text: row.modelData.supported ? qsTr("✓ runs here") : qsTr("✗ %1").arg(row.modelData.support)
                color: row.modelData.supported ? Theme.success : Theme.errorText
                font.pixelSize: Theme.smallFontSize
                ToolTip.visible: flagHover.hovered && !row.modelData.supported && row.modelData.note !== ""
                ToolTip.text: row.modelData.note
                HoverHandler { id: flagHover }
            }
        }
    }
}
