#pragma once
// Does the desktop ask for a dark colour scheme? Qt 6.4 has no colour-scheme API (6.5 added
// QStyleHints::colorScheme), so this reads the XDG desktop portal's setting
// `org.freedesktop.appearance` / `color-scheme` over the session bus
// (org.freedesktop.portal.Settings.Read: 0 no preference, 1 prefer dark, 2 prefer light), and
// falls back to the lightness of the palette's window colour.
// Thread-safety: GUI thread (uses the application's palette and the session bus connection).
#include <QDBusVariant>
#include <QObject>

#include <optional>

class QPalette;

namespace coli::app {

// 1 -> dark, 2 -> light, anything else (0 = no preference, unknown values) -> no answer.
std::optional<bool> darkFromPortalValue(uint value);
// True when the palette's window colour is dark (HSL lightness below one half).
bool paletteIsDark(const QPalette& palette);

// The desktop's current preference, followed live: `dark` is the portal's answer when it gives
// one, else the palette's; `changed` is emitted when the portal's setting or the palette
// changes. Without a session bus or portal (e.g. under Xvfb) the palette decides; the portal
// query waits at most ~300 ms, once, at construction.
class SystemTheme : public QObject {
    Q_OBJECT
public:
    explicit SystemTheme(QObject* parent = nullptr);
    bool dark() const { return m_dark; }
    // Where the answer came from: "portal" or "palette" (for the Settings view and tests).
    QString source() const { return m_source; }

signals:
    void changed();

private slots:
    void onPortalSettingChanged(const QString& ns, const QString& key, const QDBusVariant& value);

private:
    bool eventFilter(QObject* watched, QEvent* e) override;
    void update();

    std::optional<bool> m_portal; // the portal's last answer
    bool m_dark = false;
    QString m_source = QStringLiteral("palette");
};

} // namespace coli::app
