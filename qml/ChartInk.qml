import QtQuick
import Colibri

// The Charts view's series colours: Theme's accent plus hues that read on both of Theme's
// surfaces (light and dark palettes; `Theme.dark` picks).
QtObject {
    readonly property bool dark: Theme.dark === true
    readonly property color rate: Theme.accent
    readonly property color live: dark ? "#e3b341" : "#9a6700"
    readonly property color ttft: dark ? "#f0883e" : "#bc4c00"
    readonly property color mib: dark ? "#39c5bb" : "#0e8a7d"
    readonly property color vram: dark ? "#3fb950" : "#1a7f37" // the Tiers view's VRAM hue
    readonly property color pinned: dark ? "#a371f7" : "#8250df"
    readonly property color cache: Theme.accent
    readonly property color inFlight: dark ? "#d29922" : "#d4a72c"
    readonly property color disk: dark ? "#8b949e" : "#8c959f"
    readonly property color wait: dark ? "#ff7b72" : "#cf222e"
    readonly property color sampling: dark ? "#57c27a" : "#1a7f37"
}
