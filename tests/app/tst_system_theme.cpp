// SystemTheme against a desktop portal: a fake org.freedesktop.portal.Settings on a private
// session bus (the CTest command runs this under dbus-run-session) answers Read with
// color-scheme 1 (dark), then announces 2 (light) with SettingChanged; the theme follows both.
#include "system_theme.h"

#include <QDBusAbstractAdaptor>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusVariant>
#include <QGuiApplication>
#include <QPalette>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

using namespace coli::app;

namespace {
const QString kService = QStringLiteral("org.freedesktop.portal.Desktop");
const QString kPath = QStringLiteral("/org/freedesktop/portal/desktop");

// The portal's Settings interface: Read(namespace, key) -> v (a variant holding the value).
class FakePortal : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.portal.Settings")
public:
    uint scheme = 1;
    int reads = 0;
public slots:
    QDBusVariant Read(const QString& ns, const QString& key) {
        ++reads;
        if (ns != "org.freedesktop.appearance" || key != "color-scheme")
            return QDBusVariant(QVariant());
        // As xdg-desktop-portal answers: the value wrapped in one more variant.
        return QDBusVariant(QVariant::fromValue(QDBusVariant(QVariant::fromValue(scheme))));
    }
};
} // namespace

class TstSystemTheme : public QObject {
    Q_OBJECT
private slots:
    void followsThePortal();
};

void TstSystemTheme::followsThePortal() {
    QDBusConnection bus = QDBusConnection::sessionBus();
    QVERIFY2(bus.isConnected(), "no session bus: run under dbus-run-session (package dbus)");
    // The portal on a connection of its own, as a separate process would be.
    QDBusConnection portalBus =
        QDBusConnection::connectToBus(QDBusConnection::SessionBus, QStringLiteral("portal"));
    QVERIFY(portalBus.isConnected());
    FakePortal portal;
    QVERIFY(portalBus.registerObject(kPath, &portal, QDBusConnection::ExportAllSlots));
    QVERIFY(portalBus.registerService(kService));

    // Read blocks the calling thread; the fake portal answers from a second thread's loop.
    QThread portalThread;
    portal.moveToThread(&portalThread);
    portalThread.start();

    SystemTheme theme;
    QCOMPARE(portal.reads, 1);
    QCOMPARE(theme.source(), QStringLiteral("portal"));
    QVERIFY(theme.dark());

    QSignalSpy changed(&theme, &SystemTheme::changed);
    QDBusMessage signal = QDBusMessage::createSignal(
        kPath, QStringLiteral("org.freedesktop.portal.Settings"), QStringLiteral("SettingChanged"));
    signal << QStringLiteral("org.freedesktop.appearance") << QStringLiteral("color-scheme")
           << QVariant::fromValue(QDBusVariant(QVariant::fromValue(uint(2))));
    QVERIFY(portalBus.send(signal));
    QTRY_COMPARE(changed.count(), 1);
    QVERIFY(!theme.dark());
    QCOMPARE(theme.source(), QStringLiteral("portal"));

    // "No preference" (0): the palette decides.
    QDBusMessage none = QDBusMessage::createSignal(
        kPath, QStringLiteral("org.freedesktop.portal.Settings"), QStringLiteral("SettingChanged"));
    none << QStringLiteral("org.freedesktop.appearance") << QStringLiteral("color-scheme")
         << QVariant::fromValue(QDBusVariant(QVariant::fromValue(uint(0))));
    QVERIFY(portalBus.send(none));
    QTRY_COMPARE(theme.source(), QStringLiteral("palette"));
    QCOMPARE(theme.dark(), paletteIsDark(QGuiApplication::palette()));

    portalThread.quit();
    portalThread.wait();
    portalBus.unregisterObject(kPath); // the object outlives its (stopped) thread here
}

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen"); // a palette without a display
    QGuiApplication app(argc, argv);
    TstSystemTheme t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_system_theme.moc"
