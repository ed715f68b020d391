import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// Settings (AppSettings, saved at once): theme, engine options, default sampling, the usage
// database and forgetting what was learned. Each says when it applies.
Page {
    id: page
    property QtObject controller
    property QtObject appSettings
    property string forgetResult: ""
    property string pinResult: ""

    background: Rectangle { color: Theme.background }

    // A titled group of settings.
    component Section: ColumnLayout {
        property alias title: heading.text
        default property alias content: body.data
        Layout.fillWidth: true
        spacing: 6
        Label { id: heading; font.bold: true; font.pixelSize: Theme.titleFontSize; color: Theme.text; Layout.topMargin: 8 }
        GridLayout { id: body; columns: 2; columnSpacing: Theme.padding; rowSpacing: 6; Layout.fillWidth: true }
    }
    // In a narrow window (down to the window's minimum) the names wrap, the hints narrow and the
    // wide controls shorten, so that nothing leaves the window.
    component Name: Label {
        color: Theme.text; wrapMode: Text.Wrap
        Layout.fillWidth: true; Layout.preferredWidth: 200; Layout.maximumWidth: 200; Layout.minimumWidth: 110
    }
    component Hint: Label {
        color: Theme.textMuted; font.pixelSize: Theme.smallFontSize; wrapMode: Text.Wrap
        Layout.columnSpan: 2; Layout.fillWidth: true; Layout.preferredWidth: 520; Layout.maximumWidth: 520
    }
    // An editable whole number: its text editor (what Tab focuses) carries the box's name.
    component NumberBox: SpinBox {
        id: box
        editable: true
        Component.onCompleted: contentItem.Accessible.name = Qt.binding(() => box.Accessible.name)
    }
    // A decimal entry: written to the setting when editing ends with a valid value.
    component Decimal: TextField {
        id: field
        property real value: 0
        property real from: 0
        property real to: 1
        signal committed(real v)
        text: value.toString()
        color: enabled ? Theme.text : Theme.textMuted // off with "Use these values"
        Layout.preferredWidth: 110
        validator: DoubleValidator { bottom: field.from; top: field.to; notation: DoubleValidator.StandardNotation; locale: "C" }
        onEditingFinished: if (acceptableInput) committed(parseFloat(text))
    }

    ScrollView {
        id: scroll
        anchors.fill: parent
        contentWidth: availableWidth
        ColumnLayout {
            width: Math.min(scroll.availableWidth - 2 * Theme.padding * 1.5, 720)
            x: Theme.padding * 1.5
            spacing: Theme.padding

            Label { text: qsTr("Settings"); font.pixelSize: Theme.titleFontSize + 2; font.bold: true; color: Theme.text; Layout.topMargin: Theme.padding }

            Section {
                title: qsTr("Appearance")
                Name { text: qsTr("Theme") }
                Flow { // the three choices wrap rather than leave the window
                    objectName: "themeChoice"
                    Layout.fillWidth: true
                    spacing: 6
                    Repeater {
                        model: [ { v: "system", t: qsTr("Follow the system") }, { v: "light", t: qsTr("Light") }, { v: "dark", t: qsTr("Dark") } ]
                        RadioButton {
                            required property var modelData
                            objectName: "theme_" + modelData.v
                            text: modelData.t
                            checked: page.appSettings && page.appSettings.theme === modelData.v
                            Accessible.name: qsTr("Theme: %1").arg(modelData.t)
                            onClicked: page.appSettings.theme = modelData.v
                        }
                    }
                }
                Hint {
                    text: page.appSettings ? qsTr("The system asks for a %1 scheme (from the %2).")
                          .arg(page.appSettings.theme === "system" ? (page.appSettings.dark ? qsTr("dark") : qsTr("light"))
                                                                  : (page.appSettings.dark ? qsTr("dark") : qsTr("light")))
                          .arg(page.appSettings.systemThemeSource === "portal" ? qsTr("desktop portal") : qsTr("palette"))
                          : ""
                    visible: page.appSettings && page.appSettings.theme === "system"
                }
            }

            Section {
                title: qsTr("Engine")
                Name { text: qsTr("Threads") }
                NumberBox {
                    objectName: "threadsSetting"
                    from: 0; to: 256
                    value: page.appSettings ? page.appSettings.threads : 0
                    textFromValue: function(v) { return v === 0 ? qsTr("automatic") : String(v) }
                    valueFromText: function(t) { return t === qsTr("automatic") ? 0 : parseInt(t) }
                    Accessible.name: qsTr("Forward-pass threads (0 = automatic)")
                    onValueModified: page.appSettings.threads = value
                }
                Name { text: qsTr("RAM for experts (MiB)") }
                NumberBox {
                    objectName: "ramBudgetSetting"
                    from: 0; to: 1048576; stepSize: 64
                    value: page.appSettings ? page.appSettings.ramBudgetMiB : 0
                    textFromValue: function(v) { return v === 0 ? qsTr("automatic") : String(v) }
                    valueFromText: function(t) { return t === qsTr("automatic") ? 0 : parseInt(t) }
                    Accessible.name: qsTr("RAM budget for streamed experts in MiB (0 = automatic)")
                    onValueModified: page.appSettings.ramBudgetMiB = value
                }
                Name { text: qsTr("Expert reads") }
                ComboBox {
                    objectName: "readModeSetting"
                    Layout.fillWidth: true
                    Layout.maximumWidth: implicitWidth // shortens (elided) in a narrow window
                    Layout.minimumWidth: 120
                    textRole: "text"
                    valueRole: "value"
                    model: [
                        { text: qsTr("Automatic (O_DIRECT where it works)"), value: "auto" },
                        { text: qsTr("O_DIRECT always"), value: "direct" },
                        { text: qsTr("Buffered (page cache)"), value: "buffered" }
                    ]
                    implicitContentWidthPolicy: ComboBox.WidestText
                    // Not indexOfValue(): it answers -1 while the model is being set.
                    currentIndex: Math.max(0, ["auto", "direct", "buffered"].indexOf(
                                               page.appSettings ? page.appSettings.readMode : "auto"))
                    Accessible.name: qsTr("How expert files are read from disk")
                    onActivated: page.appSettings.readMode = currentValue
                }
                Name { text: qsTr("Prefetch experts") }
                Switch {
                    objectName: "prefetchSetting"
                    checked: page.appSettings ? page.appSettings.prefetch : true
                    Accessible.name: qsTr("Prefetch the experts the router will pick")
                    onToggled: page.appSettings.prefetch = checked
                }
                Name { text: qsTr("GPU for experts") }
                GpuChoice {
                    objectName: "gpuSetting"
                    Layout.fillWidth: true
                    Layout.maximumWidth: implicitWidth
                    appSettings: page.appSettings
                }
                Name { text: qsTr("VRAM for experts (MiB)") }
                Decimal {
                    id: vramBudget
                    objectName: "vramBudgetSetting"
                    from: 0; to: 1073741824
                    readonly property real mib: page.appSettings ? page.appSettings.vramBudgetMiB : 0
                    value: mib
                    text: mib > 0 ? mib.toFixed(2) : "0"
                    Accessible.name: qsTr("VRAM budget for experts in MiB (0 = the default)")
                    // Only a changed value: leaving the field keeps an exact budget (whole experts).
                    onCommitted: (v) => { if (Math.abs(v - mib) >= 0.005) page.appSettings.vramBudgetMiB = v }
                }
                Name { text: qsTr("Mirror folder") }
                RowLayout {
                    Layout.fillWidth: true
                    Label {
                        objectName: "mirrorFolderSetting"
                        Layout.fillWidth: true
                        Layout.maximumWidth: Math.min(implicitWidth, 320)
                        elide: Text.ElideMiddle
                        color: page.appSettings && page.appSettings.mirrorFolder !== "" ? Theme.text : Theme.textMuted
                        text: page.appSettings && page.appSettings.mirrorFolder !== "" ? page.appSettings.mirrorFolder : qsTr("none")
                    }
                    AppButton {
                        objectName: "mirrorFolderChoose"
                        text: qsTr("Choose…")
                        Accessible.name: qsTr("Choose a mirror folder on a second disk")
                        onClicked: mirrorBrowser.openAt(page.appSettings.mirrorFolder)
                    }
                    AppButton {
                        objectName: "mirrorFolderClear"
                        text: qsTr("Clear")
                        visible: page.appSettings !== null && page.appSettings.mirrorFolder !== ""
                        Accessible.name: qsTr("Use no mirror folder")
                        onClicked: page.appSettings.mirrorFolder = ""
                    }
                }
                Hint { text: qsTr("Threads, expert reads, the GPU and the mirror folder (model files copied to a second disk by coli mirror stage, to split expert reads between the disks) apply when a model is loaded; the RAM budget and prefetch apply at the next load (and live from the Tiers view); the VRAM budget (0 = the engine's default; the Tiers view's last one is kept here) applies at once, between answers, and at every load. Automatic threads: %1.").arg(page.appSettings ? page.appSettings.defaultThreads : 0) }
                RowLayout {
                    Layout.columnSpan: 2
                    visible: page.appSettings !== null && page.appSettings.reloadNeeded
                    Label { text: qsTr("Reload the model to apply the change."); color: Theme.accent }
                    AppButton {
                        objectName: "reloadButton"
                        text: qsTr("Reload now")
                        enabled: page.controller !== null && page.controller.modelDir !== "" && !page.controller.generating
                        onClicked: page.controller.loadModel(page.controller.modelDir)
                    }
                }
            }

            Section {
                title: qsTr("Default sampling")
                Name { text: qsTr("Use these values") }
                Switch {
                    id: custom
                    objectName: "customSampling"
                    checked: page.appSettings ? page.appSettings.customSampling : false
                    Accessible.name: qsTr("Use these sampling values instead of the model's defaults")
                    onToggled: page.appSettings.customSampling = checked
                }
                Hint { text: qsTr("Off: each model's generation_config.json decides. Applies to the next answer; command-line flags win until a value is changed here.") }
                Name { text: qsTr("Temperature") }
                Decimal { objectName: "temperatureSetting"; enabled: custom.checked; from: 0; to: 100; value: page.appSettings ? page.appSettings.temperature : 0.8; Accessible.name: qsTr("Temperature"); onCommitted: (v) => page.appSettings.temperature = v }
                Name { text: qsTr("Top-k (0 = off)") }
                NumberBox { enabled: custom.checked; from: 0; to: 100000; value: page.appSettings ? page.appSettings.topK : 40; Accessible.name: qsTr("Top-k"); onValueModified: page.appSettings.topK = value }
                Name { text: qsTr("Top-p (1 = off)") }
                Decimal { enabled: custom.checked; from: 0; to: 1; value: page.appSettings ? page.appSettings.topP : 0.95; Accessible.name: qsTr("Top-p"); onCommitted: (v) => page.appSettings.topP = v }
                Name { text: qsTr("Min-p (0 = off)") }
                Decimal { enabled: custom.checked; from: 0; to: 1; value: page.appSettings ? page.appSettings.minP : 0.05; Accessible.name: qsTr("Min-p"); onCommitted: (v) => page.appSettings.minP = v }
                Name { text: qsTr("Repeat penalty (1 = off)") }
                Decimal { enabled: custom.checked; from: 0.01; to: 100; value: page.appSettings ? page.appSettings.repeatPenalty : 1; Accessible.name: qsTr("Repeat penalty"); onCommitted: (v) => page.appSettings.repeatPenalty = v }
                Name { text: qsTr("Max new tokens") }
                NumberBox { objectName: "maxTokensSetting"; from: 1; to: 1000000; value: page.appSettings ? page.appSettings.maxNewTokens : 512; Accessible.name: qsTr("Most new tokens per answer"); onValueModified: page.appSettings.maxNewTokens = value }
            }

            Section {
                title: qsTr("Learned usage")
                Name { text: qsTr("Usage database") }
                TextField {
                    objectName: "usageDatabaseSetting"
                    Layout.fillWidth: true
                    Layout.preferredWidth: 400
                    Layout.maximumWidth: 400
                    Layout.minimumWidth: 120
                    text: page.appSettings ? page.appSettings.usageDatabase : ""
                    placeholderText: page.appSettings ? page.appSettings.effectiveUsageDatabase : ""
                    color: Theme.text
                    Accessible.name: qsTr("Usage database file (empty: the default location)")
                    onEditingFinished: page.appSettings.usageDatabase = text
                }
                Hint { text: qsTr("Where the heat and pins the app learns are kept. Empty: %1").arg(page.appSettings ? page.appSettings.effectiveUsageDatabase : "") }
                AppButton {
                    objectName: "forgetUsageButton"
                    Layout.columnSpan: 2
                    text: qsTr("Forget learned usage of this model…")
                    enabled: page.controller !== null && page.controller.modelDir !== ""
                    onClicked: confirmForget.open()
                }
                Hint { objectName: "forgetResult"; text: page.forgetResult; visible: text !== "" }
                AppButton {
                    objectName: "resetExclusionsButton"
                    Layout.columnSpan: 2
                    text: qsTr("Let learned pins use experts you unpinned")
                    enabled: page.controller !== null && page.controller.modelDir !== ""
                    onClicked: page.controller.resetPinExclusions()
                }
                Hint {
                    objectName: "pinResult"
                    text: page.pinResult !== "" ? page.pinResult
                          : qsTr("A learned pin you unpin in the Brain view stays out of the learned pins until this is pressed.")
                }
            }
            Item { Layout.preferredHeight: Theme.padding }
        }
    }

    Dialog {
        id: confirmForget
        objectName: "confirmForget"
        parent: Overlay.overlay
        x: (parent.width - width) / 2
        y: (parent.height - height) / 2
        modal: true
        // Fixed: a wrapping label's height feeding the dialog's is a binding loop in Qt 6.4.
        width: Math.min(460, page.width - 40)
        height: 220
        title: qsTr("Forget learned usage?")
        standardButtons: Dialog.Yes | Dialog.Cancel
        contentItem: Label {
            wrapMode: Text.Wrap
            text: qsTr("The heat and pins learned for %1 are deleted from the usage database. The model loads as if new until it learns again.")
                  .arg(page.controller ? page.controller.modelName : "")
        }
        onAccepted: { page.forgetResult = qsTr("Forgetting…"); page.appSettings.forgetUsage(page.controller.modelDir) }
    }
    Connections {
        target: page.appSettings
        function onUsageForgotten(message) { page.forgetResult = message }
    }
    Connections {
        target: page.controller
        function onPinMessage(text, ok) { page.pinResult = text }
    }

    FolderBrowser {
        id: mirrorBrowser
        objectName: "mirrorFolderBrowser"
        appSettings: page.appSettings
        mirrorMode: true
        onFolderAccepted: function(path) { page.appSettings.mirrorFolder = path }
    }
}
