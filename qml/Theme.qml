pragma Singleton
import QtQuick

// Colours, sizes and fonts shared by every view: neutral, dark text on light backgrounds.
QtObject {
    readonly property color background: "#f4f5f7"
    readonly property color surface: "#ffffff"
    readonly property color border: "#d9dce1"
    readonly property color text: "#1f2328"
    readonly property color textMuted: "#636c76"
    readonly property color accent: "#2f6feb"
    readonly property color accentSoft: "#e3ecfd"
    readonly property color userBubble: "#dfe9fb"
    readonly property color assistantBubble: "#ffffff"
    readonly property color errorBg: "#fdecea"
    readonly property color errorBorder: "#e5a29b"
    readonly property color errorText: "#8a1f11"
    readonly property color success: "#1a7f37"

    readonly property string fontFamily: "DejaVu Sans"
    readonly property string monoFamily: "DejaVu Sans Mono"
    readonly property int fontSize: 14
    readonly property int smallFontSize: 12
    readonly property int titleFontSize: 16
    readonly property int padding: 12
    readonly property int radius: 10
}
