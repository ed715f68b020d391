import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Colibri

// The Settings view's GPU choice (AppSettings.gpuDevice, applied at the next load): none,
// automatic, or one of the machine's Vulkan devices by name. A saved name that no device has now
// (a GPU removed, a driver gone) stays listed, marked, so the setting is not changed behind the
// user's back; the load notice then says why there is no VRAM tier.
ColumnLayout {
    id: choice
    property QtObject appSettings
    readonly property string current: appSettings ? appSettings.gpuDevice : "none"
    readonly property var devices: appSettings ? appSettings.gpuDevices : []
    readonly property var entries: {
        const out = [{ text: qsTr("None (experts on the CPU)"), value: "none", detail: "" },
                     { text: qsTr("Automatic (a discrete, else an integrated GPU)"), value: "auto",
                       detail: "" }]
        let known = current === "none" || current === "auto"
        for (const d of devices) {
            out.push({ text: d.name, value: d.name, detail: d.description })
            known = known || matches(d.name)
        }
        if (!known)
            out.push({ text: qsTr("%1 (not found now)").arg(current), value: current, detail: "" })
        return out
    }
    spacing: 2

    // gpu::chooseDevice's rule for a name: a case-insensitive substring.
    function matches(name) {
        return current !== "none" && current !== "auto"
               && name.toLowerCase().indexOf(current.toLowerCase()) >= 0
    }

    ComboBox {
        id: box
        objectName: "gpuDeviceBox"
        textRole: "text"
        valueRole: "value"
        model: choice.entries
        implicitContentWidthPolicy: ComboBox.WidestText
        Layout.fillWidth: true // up to its widest entry; shorter (elided) in a narrow window
        Layout.maximumWidth: Math.min(implicitWidth, 420)
        Layout.minimumWidth: 120
        // The exact entry, else the device the engine would choose for a saved part of a name
        // (`--gpu llvmpipe`): the first whose name contains it.
        currentIndex: {
            const exact = choice.entries.findIndex(e => e.value === choice.current)
            return Math.max(0, exact >= 0 ? exact
                                          : choice.entries.findIndex(e => choice.matches(e.value)))
        }
        Accessible.name: qsTr("The GPU that computes experts")
        onActivated: choice.appSettings.gpuDevice = currentValue
    }
    Label {
        objectName: "gpuDeviceDetail"
        Layout.fillWidth: true
        Layout.maximumWidth: 420
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pixelSize: Theme.smallFontSize
        readonly property var entry: choice.entries[box.currentIndex]
        text: entry && entry.detail !== "" ? entry.detail
              : choice.appSettings && choice.appSettings.gpuDevicesProblem !== ""
                ? qsTr("No GPU found: %1").arg(choice.appSettings.gpuDevicesProblem) : ""
        visible: text !== ""
    }
}
