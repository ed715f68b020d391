// The Hub token in the app (app/hub_token.h): HF_TOKEN, then $HF_HOME/token, then the keychain;
// with a real keyring (gnome-keyring on a private session bus, started by with_keyring.sh) a
// token is stored and read back by a fresh object; without a keychain service the typed token is
// used for this run only, the status says it cannot be saved, and it never reaches the settings
// file or the log. CTest runs this program twice: tst_hub_token (with the keyring) and
// tst_hub_token_no_keychain (no session bus); each case that does not apply to a run skips with
// the reason.
#include "app_settings.h"
#include "hub_token.h"

#include <QCoreApplication>
#include <QDirIterator>
#include <QFile>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace coli::app;

namespace {
QStringList g_log;
QtMessageHandler g_prev = nullptr;
void recordAll(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    g_log << msg;
    if (g_prev) g_prev(type, ctx, msg);
}

// Every file under `dir` that contains `needle`.
QStringList filesContaining(const QString& dir, const QByteArray& needle) {
    QStringList hits;
    QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        QFile f(it.next());
        if (f.open(QIODevice::ReadOnly) && f.readAll().contains(needle)) hits << f.fileName();
    }
    return hits;
}

bool waitChecked(HubToken& t) {
    if (t.keychainState() != QStringLiteral("checking")) return true;
    QSignalSpy spy(&t, &HubToken::keychainChecked);
    return spy.wait(20000);
}

bool keyringRuns() {
    return qEnvironmentVariableIntValue("COLI_TEST_KEYRING") == 1;
}
QString keyringSkipReason() {
    const QString why = qEnvironmentVariable("COLI_TEST_KEYRING_SKIP");
    return why.isEmpty() ? QStringLiteral("no keyring was started for this run") : why;
}
} // namespace

class TstHubToken : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanupTestCase();
    void environmentComesFirst();
    void keychainRoundTrip();
    void withoutKeychainTheTokenIsForThisRunOnly();

private:
    QTemporaryDir m_config, m_hfHome;
    QString m_service;
};

void TstHubToken::initTestCase() {
    QVERIFY(m_config.isValid() && m_hfHome.isValid());
    qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("Colibri"));
    QCoreApplication::setApplicationName(QStringLiteral("Colibri Desktop"));
    m_service = QStringLiteral("Colibri Desktop test %1").arg(QCoreApplication::applicationPid());
    g_prev = qInstallMessageHandler(recordAll);
}

void TstHubToken::init() {
    qunsetenv("HF_TOKEN");
    qunsetenv("HF_ENDPOINT");
    qputenv("HF_HOME", m_hfHome.path().toUtf8());
    QFile::remove(m_hfHome.filePath(QStringLiteral("token")));
}

void TstHubToken::cleanupTestCase() {
    qInstallMessageHandler(g_prev);
}

void TstHubToken::environmentComesFirst() {
    const QByteArray fileToken = "hf_fromTheTokenFile0001";
    const QByteArray envToken = "hf_fromTheEnvironment0002";
    {
        QFile f(m_hfHome.filePath(QStringLiteral("token")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(fileToken + "\n");
    }
    qputenv("HF_TOKEN", envToken);
    HubToken a(m_service);
    QCOMPARE(QByteArray::fromStdString(a.token()), envToken);
    QCOMPARE(a.source(), QStringLiteral("HF_TOKEN"));
    QVERIFY(a.fromEnvironment());
    // A typed token does not override the environment's.
    a.setToken(QStringLiteral("hf_typedButNotUsed0003"));
    QCOMPARE(QByteArray::fromStdString(a.token()), envToken);
    QSignalSpy saved(&a, &HubToken::savedToKeychain);
    QVERIFY(saved.wait(20000));
    QVERIFY(waitChecked(a));
    a.forget();
    QSignalSpy forgotten(&a, &HubToken::forgotten);
    QVERIFY(forgotten.wait(20000));

    qunsetenv("HF_TOKEN");
    HubToken b(m_service);
    QCOMPARE(QByteArray::fromStdString(b.token()), fileToken);
    QCOMPARE(b.source(), m_hfHome.filePath(QStringLiteral("token")));
    QVERIFY(waitChecked(b));

    QFile::remove(m_hfHome.filePath(QStringLiteral("token")));
    HubToken c(m_service);
    QVERIFY(waitChecked(c));
    QVERIFY(!c.fromEnvironment());
    QVERIFY(!c.hasToken());
    for (const QString& line : g_log)
        QVERIFY2(!line.contains(QString::fromLatin1(envToken)) &&
                     !line.contains(QString::fromLatin1(fileToken)),
                 "a token was logged");
}

void TstHubToken::keychainRoundTrip() {
    if (!keyringRuns()) QSKIP(qPrintable("no keyring in this run: " + keyringSkipReason()));
    const QByteArray token = "hf_keychainRoundTrip0004";
    {
        HubToken a(m_service);
        QVERIFY(waitChecked(a));
        QCOMPARE(a.keychainState(), QStringLiteral("available"));
        QVERIFY(!a.hasToken());
        QSignalSpy saved(&a, &HubToken::savedToKeychain);
        a.setToken(QString::fromLatin1(token));
        QVERIFY(saved.wait(20000));
        QCOMPARE(saved.first().first().toBool(), true);
        QCOMPARE(a.source(), QStringLiteral("keychain"));
    }
    {
        HubToken b(m_service); // a fresh object: the token comes back from the keychain
        QVERIFY(waitChecked(b));
        QCOMPARE(b.source(), QStringLiteral("keychain"));
        QCOMPARE(QByteArray::fromStdString(b.token()), token);
        QVERIFY(b.hasToken());
        QSignalSpy forgotten(&b, &HubToken::forgotten);
        b.forget();
        QVERIFY(forgotten.wait(20000));
        QCOMPARE(forgotten.first().first().toBool(), true);
        QVERIFY(!b.hasToken());
    }
    HubToken c(m_service);
    QVERIFY(waitChecked(c));
    QVERIFY(!c.hasToken());
    QVERIFY2(filesContaining(m_config.path(), token).isEmpty(), "the token is in a settings file");
    for (const QString& line : g_log)
        QVERIFY2(!line.contains(QString::fromLatin1(token)), "the token was logged");
}

void TstHubToken::withoutKeychainTheTokenIsForThisRunOnly() {
    if (keyringRuns())
        QSKIP("a keychain service runs in this run: the case without one is "
              "tst_hub_token_no_keychain");
    const QByteArray token = "hf_thisRunOnly0005";
    AppSettings settings{QString()};
    settings.setTheme(QStringLiteral("dark")); // the settings file exists and is written
    HubToken a(m_service);
    QVERIFY(waitChecked(a));
    QCOMPARE(a.keychainState(), QStringLiteral("unavailable"));
    QSignalSpy saved(&a, &HubToken::savedToKeychain);
    a.setToken(QString::fromLatin1(token));
    // Used at once, before the keychain answers.
    QCOMPARE(QByteArray::fromStdString(a.token()), token);
    QVERIFY(saved.wait(20000));
    QCOMPARE(saved.first().first().toBool(), false);
    QCOMPARE(QByteArray::fromStdString(a.token()), token);
    QCOMPARE(a.source(), QStringLiteral("this run only"));
    QVERIFY2(a.status().contains(QStringLiteral("cannot be saved")), qPrintable(a.status()));
    QVERIFY2(!a.status().contains(QString::fromLatin1(token)), "the status shows the token");
    auto e = a.endpoint();
    QVERIFY(e);
    QCOMPARE(QByteArray::fromStdString(e->token), token);

    QSettings().sync();
    settings.setTheme(QStringLiteral("light"));
    const QString file = QSettings().fileName();
    QVERIFY2(QFile::exists(file), qPrintable(file));
    QVERIFY2(filesContaining(m_config.path(), token).isEmpty(),
             "the token was written to the settings");
    for (const QString& line : g_log)
        QVERIFY2(!line.contains(QString::fromLatin1(token)), "the token was logged");

    HubToken b(m_service); // the next run: nothing was kept
    QVERIFY(waitChecked(b));
    QVERIFY(!b.hasToken());
}

QTEST_GUILESS_MAIN(TstHubToken)
#include "tst_hub_token.moc"
