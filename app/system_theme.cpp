#include "system_theme.h"

#include <QColor>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusVariant>
#include <QEvent>
#include <QGuiApplication>
#include <QPalette>

namespace coli::app {

namespace {
const QString kService = QStringLiteral("org.freedesktop.portal.Desktop");
const QString kPath = QStringLiteral("/org/freedesktop/portal/desktop");
const QString kInterface = QStringLiteral("org.freedesktop.portal.Settings");
const QString kNamespace = QStringLiteral("org.freedesktop.appearance");
const QString kKey = QStringLiteral("color-scheme");

// Read returns the value wrapped twice (a variant holding a variant holding a uint32).
std::optional<uint> unwrapUint(QVariant v) {
    for (int i = 0; i < 3 && v.canConvert<QDBusVariant>(); ++i)
        v = v.value<QDBusVariant>().variant();
    bool ok = false;
    const uint u = v.toUInt(&ok);
    if (!ok) return std::nullopt;
    return u;
}
// The GUI application, or null under a plain QCoreApplication (qGuiApp would be a bad cast).
QGuiApplication* guiApp() {
    return qobject_cast<QGuiApplication*>(QCoreApplication::instance());
}
} // namespace

std::optional<bool> darkFromPortalValue(uint value) {
    if (value == 1) return true;
    if (value == 2) return false;
    return std::nullopt;
}

bool paletteIsDark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightnessF() < 0.5;
}

SystemTheme::SystemTheme(QObject* parent) : QObject(parent) {
    QDBusConnection bus = QDBusConnection::sessionBus();
    if (bus.isConnected()) {
        QDBusMessage call =
            QDBusMessage::createMethodCall(kService, kPath, kInterface, QStringLiteral("Read"));
        call << kNamespace << kKey;
        const QDBusMessage reply = bus.call(call, QDBus::Block, 300);
        if (reply.type() == QDBusMessage::ReplyMessage && !reply.arguments().isEmpty())
            if (auto u = unwrapUint(reply.arguments().first())) m_portal = darkFromPortalValue(*u);
        bus.connect(kService, kPath, kInterface, QStringLiteral("SettingChanged"), this,
                    SLOT(onPortalSettingChanged(QString, QString, QDBusVariant)));
    }
    if (guiApp()) guiApp()->installEventFilter(this); // palette changes (ApplicationPaletteChange)
    update();
}

void SystemTheme::onPortalSettingChanged(const QString& ns, const QString& key,
                                         const QDBusVariant& value) {
    if (ns != kNamespace || key != kKey) return;
    const auto u = unwrapUint(value.variant());
    m_portal = u ? darkFromPortalValue(*u) : std::nullopt;
    update();
}

bool SystemTheme::eventFilter(QObject* watched, QEvent* e) {
    if (watched == guiApp() && e->type() == QEvent::ApplicationPaletteChange) update();
    return QObject::eventFilter(watched, e);
}

void SystemTheme::update() {
    const bool dark = m_portal ? *m_portal : (guiApp() && paletteIsDark(guiApp()->palette()));
    const QString source = m_portal ? QStringLiteral("portal") : QStringLiteral("palette");
    if (dark == m_dark && source == m_source) return;
    m_dark = dark;
    m_source = source;
    emit changed();
}

} // namespace coli::app
