import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The main window: header (model, load state, new chat), a sidebar of views (Chat, Tiers, Brain,
// Charts, Models, Settings; the Atlas slots in the same list), load progress, the banner, and the
// current view. `controller` is the C++ EngineController, `appSettings` the AppSettings.
ApplicationWindow {
    id: win
    objectName: "mainWindow"
    property QtObject controller
    property QtObject appSettings
    property QtObject sessions  // SessionManager (saved chats); null: none
    property QtObject turnStats // TurnStatsModel (the Charts view's data); null: none
    property QtObject atlas     // AtlasModel (the Atlas view's data); null: none
    property QtObject wizard    // WizardController (Get a model…); null: none

    // Fits a 1000-px-high screen at 1.5x scaling (667 logical px less panels and decorations).
    width: 960
    height: 600
    minimumWidth: 640
    minimumHeight: 420
    visible: true
    title: controller && controller.modelName !== "" ? "Colibri — " + controller.modelName : "Colibri"
    color: Theme.background
    font.family: Theme.fontFamily
    font.pixelSize: Theme.fontSize

    readonly property bool ready: controller !== null && controller.loadState === "ready"
    readonly property bool busy: controller !== null && controller.generating

    // The views, in sidebar order. `key`: the shortcut that shows it.
    readonly property var views: [
        { name: "chat", title: qsTr("Chat"), icon: "✎", key: "Ctrl+1" },
        { name: "tiers", title: qsTr("Tiers"), icon: "▦", key: "Ctrl+2" },
        { name: "brain", title: qsTr("Brain"), icon: "✺", key: "Ctrl+5" },
        { name: "atlas", title: qsTr("Atlas"), icon: "✷", key: "Ctrl+6" },
        { name: "charts", title: qsTr("Charts"), icon: "◔", key: "Ctrl+3" },
        { name: "models", title: qsTr("Models"), icon: "❐", key: "Ctrl+O" },
        { name: "settings", title: qsTr("Settings"), icon: "⚙", key: "Ctrl+4" }
    ]
    function showView(name) {
        // The wizard is not in the sidebar: it follows the views in the stack, reached from the
        // Models view (Get a model…) and shown at start when no model is known.
        if (name === "wizard")
            stack.currentIndex = views.length
        for (let i = 0; i < views.length; ++i)
            if (views[i].name === name)
                stack.currentIndex = i
        if (name === "chat")
            chatPage.focusInput()
    }

    Binding { target: Theme; property: "dark"; value: win.appSettings ? win.appSettings.dark : false }
    // The controls' own colours (radio buttons, switches, spin boxes, fields) follow the theme.
    palette.window: Theme.background
    palette.windowText: Theme.text
    palette.base: Theme.field
    palette.alternateBase: Theme.background
    palette.text: Theme.text
    palette.button: Theme.field
    palette.buttonText: Theme.text
    palette.brightText: Theme.text
    palette.highlight: Theme.accent
    palette.highlightedText: Theme.accentText
    palette.placeholderText: Theme.textMuted
    palette.mid: Theme.border
    palette.midlight: Theme.border
    palette.dark: Theme.textMuted
    palette.light: Theme.surface
    palette.toolTipBase: Theme.surface
    palette.toolTipText: Theme.text
    palette.disabled.text: Theme.textMuted
    palette.disabled.windowText: Theme.textMuted
    palette.disabled.buttonText: Theme.textMuted
    // The one tooltip that every `ToolTip.text` shows is a popup the engine makes with Qt's default
    // palette (pale yellow), not the window's, and it keeps it through theme changes (Qt 6.4): it
    // is painted here at start and at every theme change (it stayed light in the dark theme).
    function paintToolTip() {
        // Asked through an item QML made (the engine knows it), it is made here if needed.
        const tip = win.header.ToolTip.toolTip
        if (!tip) return
        tip.palette.toolTipBase = Theme.surface
        tip.palette.toolTipText = Theme.text
    }
    Connections { target: Theme; function onDarkChanged() { win.paintToolTip() } }

    header: Rectangle {
        objectName: "header"
        implicitHeight: headerRow.implicitHeight + 2 * Theme.padding
        color: Theme.surface
        Rectangle {
            anchors { left: parent.left; right: parent.right; bottom: parent.bottom }
            height: 1
            color: Theme.border
        }
        RowLayout {
            id: headerRow
            anchors { fill: parent; leftMargin: Theme.padding * 1.5; rightMargin: Theme.padding * 1.5 }
            spacing: Theme.padding

            ColumnLayout {
                spacing: 2
                Layout.fillWidth: true
                Label {
                    objectName: "modelName"
                    // A click shows the model's details.
                    MouseArea {
                        anchors.fill: parent
                        cursorShape: Qt.PointingHandCursor
                        onClicked: modelInfo.open()
                    }
                    ModelInfoPopup { id: modelInfo; objectName: "modelInfoPopup"; controller: win.controller; y: parent.height + 6 }
                    text: controller && controller.modelName !== "" ? controller.modelName
                                                                     : qsTr("No model")
                    font.pixelSize: Theme.titleFontSize
                    font.bold: true
                    color: Theme.text
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                }
                Label {
                    text: controller ? (controller.modelInfo !== "" ? controller.modelInfo
                                                                    : controller.modelDir) : ""
                    font.pixelSize: Theme.smallFontSize
                    color: Theme.textMuted
                    elide: Text.ElideMiddle
                    Layout.fillWidth: true
                }
            }
            StateChip {
                objectName: "loadStateChip"
                loadState: controller ? controller.loadState : "empty"
                progress: controller ? controller.loadProgress : 0
            }
            AppButton {
                objectName: "newChatButton"
                text: qsTr("New chat")
                enabled: controller !== null
                onClicked: win.newChat()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Start over (Ctrl+N)")
            }
        }
    }

    RowLayout {
        anchors.fill: parent
        spacing: 0

        Sidebar {
            id: sidebar
            objectName: "sidebar"
            Layout.fillHeight: true
            views: win.views
            // The wizard belongs to the Models view.
            currentIndex: stack.currentIndex < win.views.length ? stack.currentIndex
                                                                : win.views.findIndex(v => v.name === "models")
            onActivated: function(name) { win.showView(name) }
        }

        ColumnLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            spacing: 0

            ProgressBar {
                objectName: "loadProgress"
                Layout.fillWidth: true
                visible: controller !== null && controller.loadState === "loading"
                value: controller ? controller.loadProgress : 0
            }

            ErrorBanner {
                objectName: "errorBanner"
                Layout.fillWidth: true
                Layout.margins: Theme.padding
                Layout.bottomMargin: 0
                message: controller ? controller.errorText : ""
                kind: controller ? controller.noticeKind : "error"
                onDismissed: controller.clearError()
            }
            ErrorBanner { // the database: chats or learned usage not being saved
                objectName: "storageBanner"
                Layout.fillWidth: true
                Layout.margins: Theme.padding
                Layout.bottomMargin: 0
                message: win.sessions ? win.sessions.storageProblem : ""
                onDismissed: win.sessions.dismissStorageProblem()
            }

            StackLayout {
                id: stack
                objectName: "viewStack"
                readonly property string currentName: currentIndex < win.views.length
                                                      ? win.views[currentIndex].name : "wizard"
                Layout.fillWidth: true
                Layout.fillHeight: true

                ChatPage {
                    id: chatPage
                    objectName: "chatPage"
                    controller: win.controller
                    sessions: win.sessions
                    onStopRequested: win.stop()
                    onNewChatRequested: win.newChat()
                }
                TiersView { objectName: "tiersView"; controller: win.controller }
                BrainView { objectName: "brainView"; controller: win.controller }
                AtlasView { objectName: "atlasView"; controller: win.controller; atlas: win.atlas }
                ChartsView {
                    objectName: "chartsView"
                    controller: win.controller
                    appSettings: win.appSettings
                    stats: win.turnStats
                }
                ModelsView {
                    id: modelsView
                    objectName: "modelsView"
                    controller: win.controller
                    appSettings: win.appSettings
                    onModelChosen: win.showView("chat")
                    onWizardRequested: win.showView("wizard")
                }
                SettingsView { objectName: "settingsView"; controller: win.controller; appSettings: win.appSettings }
                WizardView {
                    objectName: "wizardView"
                    wizard: win.wizard
                    controller: win.controller
                    appSettings: win.appSettings
                    onChatRequested: win.showView("chat")
                    onCloseRequested: win.openModels()
                }
            }
        }
    }

    function newChat() {
        if (sessions)
            sessions.newSession() // also forgets "the last chat shown"
        else
            controller.newChat()
        showView("chat")
    }
    function stop() {
        controller.stop()
        chatPage.focusInput() // the Stop button took the focus: typing goes on in the composer
    }
    function openModels() {
        showView("models")
        modelsView.focusList()
    }

    // An export's result, in the banner (a failure names the file and why).
    Connections {
        target: win.sessions
        function onExported(path, error) {
            if (error === "")
                win.controller.showNotice(qsTr("Exported the chat to %1.").arg(path))
            else
                win.controller.showError(qsTr("Could not export the chat: %1").arg(error))
        }
    }

    Connections {
        target: controller
        function onAnswerFinished(row) { if (stack.currentIndex === 0) chatPage.focusInput() }
    }

    // Application-wide: they work whatever has the focus (a message's text, a list, a field).
    Shortcut { sequence: "Ctrl+O"; context: Qt.ApplicationShortcut; onActivated: win.openModels() }
    Shortcut { sequence: "Ctrl+N"; context: Qt.ApplicationShortcut; onActivated: win.newChat() }
    Shortcut {
        sequence: "Escape"; context: Qt.ApplicationShortcut; enabled: win.busy
        onActivated: win.stop()
    }
    Shortcut { sequence: StandardKey.Quit; context: Qt.ApplicationShortcut; onActivated: Qt.quit() }
    Shortcut { sequence: "Ctrl+1"; context: Qt.ApplicationShortcut; onActivated: win.showView("chat") }
    Shortcut { sequence: "Ctrl+2"; context: Qt.ApplicationShortcut; onActivated: win.showView("tiers") }
    Shortcut { sequence: "Ctrl+3"; context: Qt.ApplicationShortcut; onActivated: win.showView("charts") }
    Shortcut { sequence: "Ctrl+4"; context: Qt.ApplicationShortcut; onActivated: win.showView("settings") }
    Shortcut { sequence: "Ctrl+5"; context: Qt.ApplicationShortcut; onActivated: win.showView("brain") }
    Shortcut { sequence: "Ctrl+6"; context: Qt.ApplicationShortcut; onActivated: win.showView("atlas") }

    // No model anywhere (none loaded, none in the Models list that exists): start with the wizard.
    function knowsAModel() {
        const rows = appSettings ? appSettings.models : []
        for (let i = 0; i < rows.length; ++i)
            if (rows[i].exists)
                return true
        return controller !== null && controller.loadState !== "empty" && controller.loadState !== "error"
    }
    // The wizard opened by itself steps aside when a model starts loading from elsewhere (the
    // command line, a script, the Models list) before the user has begun it.
    property bool wizardOpenedAtStart: false
    Connections {
        target: win.controller
        function onLoadStateChanged() {
            const loading = win.controller.loadState === "loading" || win.controller.loadState === "ready"
            if (win.wizardOpenedAtStart && loading && stack.currentName === "wizard"
                    && win.wizard.page === 0 && !win.wizard.busy)
                win.showView("chat")
            if (loading)
                win.wizardOpenedAtStart = false
        }
    }
    Component.onCompleted: {
        paintToolTip()
        if (wizard && !knowsAModel()) {
            wizardOpenedAtStart = true
            showView("wizard")
        } else {
            chatPage.focusInput()
        }
    }
}
