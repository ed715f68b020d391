pragma Singleton
import QtQuick

// Colours, sizes and fonts shared by every view. `dark` picks the dark palette; Main binds it to
// the Settings view's choice (light, dark, or the desktop's scheme: AppSettings.dark).
QtObject {
    property bool dark: false

    readonly property color background: dark ? "#16181c" : "#f4f5f7"
    readonly property color surface: dark ? "#1f2227" : "#ffffff"
    // Inside the controls (fields, spin boxes, radio buttons, switch tracks): in the dark theme a
    // shade lighter than the surfaces, so that Fusion's dark outlines do not hide them.
    readonly property color field: dark ? "#2b2f37" : "#ffffff"
    readonly property color sidebar: dark ? "#1b1d22" : "#eceef1"
    readonly property color border: dark ? "#363a42" : "#d9dce1"
    readonly property color text: dark ? "#e6e8eb" : "#1f2328"
    readonly property color textMuted: dark ? "#9aa3ad" : "#636c76"
    readonly property color accent: dark ? "#5b9bff" : "#2f6feb"
    readonly property color accentText: "#ffffff" // on an accent fill
    readonly property color accentSoft: dark ? "#24344f" : "#e3ecfd"
    readonly property color userBubble: dark ? "#27406a" : "#dfe9fb"
    readonly property color assistantBubble: dark ? "#23262c" : "#ffffff"
    readonly property color errorBg: dark ? "#3a1d1a" : "#fdecea"
    readonly property color errorBorder: dark ? "#8c3b33" : "#e5a29b"
    readonly property color errorText: dark ? "#ffb4a9" : "#8a1f11"
    // Notices that are not failures (older messages left out, the context filled): neutral.
    readonly property color infoBg: dark ? "#1f2a38" : "#eef3fb"
    readonly property color infoBorder: dark ? "#3b516f" : "#b7c9e6"
    readonly property color infoText: dark ? "#c9d8ee" : "#24364f"
    readonly property color success: dark ? "#57c27a" : "#1a7f37"
    // Code blocks in answers: a shade off the bubble.
    readonly property color codeBackground: dark ? "#181a1f" : "#f6f8fa"

    readonly property string fontFamily: "DejaVu Sans"
    // Code blocks; inline code in answers uses the same family (app/markdown RenderOptions).
    readonly property string monoFamily: "DejaVu Sans Mono"
    readonly property int fontSize: 14
    readonly property int smallFontSize: 12
    readonly property int titleFontSize: 16
    readonly property int padding: 12
    readonly property int radius: 10
}
