// The model wizard's Hub pages without a window (app/wizard/wizard_hub.cpp), against the local
// Hub (tests/hub/hub_server.py, started by the rig with HF_ENDPOINT set to it): search lists the
// shipped tiny model flagged supported and a dense Llama repo flagged with its architecture;
// choosing a repo plans it (files, size) or refuses it by its architecture; the download runs to
// the end on the wizard's thread and the flow goes on to Check with the downloaded folder; a
// paused download resumes fetching only the rest; Cancel deletes the partial files.
#include "app_settings.h"
#include "wizard/wizard_controller.h"

#include "hub/http_client.h"
#include "hub_test_server.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace coli;
using namespace coli::app;
namespace fs = std::filesystem;

namespace {
const char* kTiny = "test-org/colibri-moe-tiny";
const char* kDense = "test-org/colibri-llama-dense";
// Slow enough to pause in the middle of the 25 MB weight file, fast enough for a quick test.
constexpr int kThrottle = 6 << 20;

bool waitFor(const std::function<bool()>& done, int ms = 60000) {
    return QTest::qWaitFor(done, ms);
}
} // namespace

class TstWizardHub : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void searchFlagsSupportedAndUnsupported();
    void choosingARepoPlansOrRefusesIt();
    void downloadRunsToTheEndAndGoesOnToCheck();
    void pauseAndResumeFetchOnlyTheRest();
    void cancelDeletesThePartialFiles();
    void anUnfinishedDownloadIsOfferedAtStart();
    void theRecordGoesToTheSettingsDatabase();

private:
    QJsonObject stats();
    bool chooseRepo(WizardController& w, const QString& repo);
    bool toDownloadPage(WizardController& w, const QString& parent);
    QString pausedDownload(AppSettings* settings, const QString& parent);
    QTemporaryDir m_home;
    std::unique_ptr<hub_test::TempDir> m_repos;
    std::unique_ptr<hub_test::HubServer> m_server;
};

void TstWizardHub::initTestCase() {
    QVERIFY(m_home.isValid());
    // Nothing of the user's: config, database, models folder, token, keychain.
    qputenv("XDG_CONFIG_HOME", (m_home.path() + "/config").toUtf8());
    qputenv("XDG_DATA_HOME", (m_home.path() + "/data").toUtf8());
    qputenv("HF_HOME", (m_home.path() + "/hf").toUtf8());
    qunsetenv("HF_TOKEN");
    qputenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/colibri-test-bus");
    QCoreApplication::setOrganizationName(QStringLiteral("Colibri"));
    QCoreApplication::setApplicationName(QStringLiteral("Colibri Desktop"));

    m_repos = std::make_unique<hub_test::TempDir>();
    const fs::path tiny = m_repos->path() / "tiny", dense = m_repos->path() / "dense";
    fs::copy(COLI_SOURCE_DIR "/resources/models/colibri-moe-tiny", tiny,
             fs::copy_options::recursive);
    hub_test::writeBytes(tiny / "_hub.json", R"({"downloads": 50, "behaviour": {"throttle": )" +
                                                 std::to_string(kThrottle) + "}}");
    hub_test::writeBytes(dense / "config.json",
                         R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                             "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 128})");
    hub_test::writeBytes(dense / "model.safetensors", hub_test::randomBytes(4096, 7));
    hub_test::writeBytes(dense / "_hub.json", R"({"downloads": 10})");
    hub_test::HubServerOptions o;
    o.repos = {{kTiny, tiny.string()}, {kDense, dense.string()}};
    std::string error;
    m_server = hub_test::HubServer::start(o, &error);
    QVERIFY2(m_server, error.c_str());
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(m_server->endpoint()));
}

QJsonObject TstWizardHub::stats() {
    hub::HttpClient c(hub::HubEndpoint{m_server->endpoint(), "", ""});
    hub::HttpRequest req;
    req.url = m_server->endpoint() + "/_colibri/stats";
    auto r = c.get(req);
    if (!r.isOk()) return {};
    return QJsonDocument::fromJson(QByteArray::fromStdString(r.value().body)).object();
}

bool TstWizardHub::chooseRepo(WizardController& w, const QString& repo) {
    QSignalSpy inspected(&w, &WizardController::sourceInspected);
    w.chooseRepo(repo);
    return inspected.wait(30000) && waitFor([&] { return !w.busy(); });
}

// A controller (with `settings`, may be null) that downloads the tiny repo into `parent`, pauses
// it past a fifth and is closed: the download's folder, "" when a step failed.
QString TstWizardHub::pausedDownload(AppSettings* settings, const QString& parent) {
    WizardController w(nullptr, settings);
    if (!toDownloadPage(w, parent)) return {};
    QSignalSpy finished(&w, &WizardController::downloadFinished);
    w.startDownload();
    if (!waitFor([&] { return w.downloadProgress() > 0.2; })) return {};
    w.pauseDownload();
    if (!finished.wait(30000) || w.downloadState() != QStringLiteral("paused")) return {};
    return w.downloadDir();
}

bool TstWizardHub::toDownloadPage(WizardController& w, const QString& parent) {
    if (!chooseRepo(w, QString::fromLatin1(kTiny))) return false;
    w.next();            // -> place
    w.setSpaceMargin(0); // not 5 % of this machine's disk: how full it is must not decide the test
    QSignalSpy checked(&w, &WizardController::spaceChecked);
    w.chooseTargetParent(parent);
    if (!checked.wait(30000) || !waitFor([&] { return !w.busy(); })) return false;
    w.next(); // -> download
    return w.pageName() == QStringLiteral("download");
}

void TstWizardHub::searchFlagsSupportedAndUnsupported() {
    WizardController w(nullptr, nullptr);
    QVERIFY(w.hubAvailable());
    QSignalSpy done(&w, &WizardController::searchFinished);
    w.search(QStringLiteral("colibri"));
    QVERIFY(done.wait(30000));
    QVERIFY2(w.hubStatus().isEmpty(), qPrintable(w.hubStatus()));
    QCOMPARE(w.searchText(), QStringLiteral("colibri"));
    const QVariantList rows = w.searchResults();
    QCOMPARE(rows.size(), 2);
    const QVariantMap tiny = rows[0].toMap(), dense = rows[1].toMap(); // most downloaded first
    QCOMPARE(tiny.value("repo").toString(), QString::fromLatin1(kTiny));
    QCOMPARE(tiny.value("architecture").toString(), QStringLiteral("MixtralForCausalLM"));
    QVERIFY(tiny.value("supported").toBool());
    QCOMPARE(tiny.value("downloads").toInt(), 50);
    QCOMPARE(dense.value("repo").toString(), QString::fromLatin1(kDense));
    QVERIFY(!dense.value("supported").toBool());
    QVERIFY2(dense.value("note").toString().contains("LlamaForCausalLM"),
             qPrintable(dense.value("note").toString()));
    // Searching for nothing there says so.
    w.search(QStringLiteral("no-such-model-anywhere"));
    QVERIFY(done.wait(30000));
    QVERIFY(w.searchResults().isEmpty());
    QVERIFY(!w.hubStatus().isEmpty());
}

void TstWizardHub::choosingARepoPlansOrRefusesIt() {
    WizardController w(nullptr, nullptr);
    QVERIFY(chooseRepo(w, QString::fromLatin1(kTiny)));
    QVERIFY2(w.sourceError().isEmpty(), qPrintable(w.sourceError()));
    QVERIFY(w.source().value("supported").toBool());
    const QVariantMap plan = w.repoPlan();
    QVERIFY2(plan.value("error").toString().isEmpty(), qPrintable(plan.value("error").toString()));
    QCOMPARE(plan.value("fileCount").toInt(), 6);
    QVERIFY(plan.value("totalBytes").toDouble() > 25e6);
    QVERIFY(!plan.value("totalText").toString().isEmpty());
    QVERIFY2(w.nextHint().isEmpty(), qPrintable(w.nextHint()));
    // The default place: the models folder, one folder per repo.
    QCOMPARE(w.downloadDir(), m_home.path() + "/data/colibri/models/test-org--colibri-moe-tiny");

    QVERIFY(chooseRepo(w, QString::fromLatin1(kDense)));
    QVERIFY(!w.source().value("supported").toBool());
    QVERIFY2(w.source().value("note").toString().contains("LlamaForCausalLM"),
             qPrintable(w.source().value("note").toString()));
    QVERIFY(!w.canNext());
    QVERIFY(w.nextHint().contains("LlamaForCausalLM"));

    QVERIFY(chooseRepo(w, QStringLiteral("test-org/not-there")));
    QVERIFY(!w.sourceError().isEmpty());
    QVERIFY(!w.canNext());
}

void TstWizardHub::downloadRunsToTheEndAndGoesOnToCheck() {
    QTemporaryDir parent;
    WizardController w(nullptr, nullptr);
    QVERIFY(toDownloadPage(w, parent.path()));
    QVERIFY(!w.canNext()); // not downloaded yet
    QSignalSpy finished(&w, &WizardController::downloadFinished);
    QSignalSpy progress(&w, &WizardController::progressChanged);
    w.startDownload();
    QCOMPARE(w.downloadState(), QStringLiteral("running"));
    QVERIFY(finished.wait(60000));
    QVERIFY2(w.downloadError().isEmpty(), qPrintable(w.downloadError()));
    QCOMPARE(finished.takeFirst().at(0).toString(), QStringLiteral("done"));
    QVERIFY(progress.count() >= 2);
    QCOMPARE(w.downloadProgress(), 1.0);
    const QString dir = parent.path() + "/test-org--colibri-moe-tiny";
    QCOMPARE(w.downloadDir(), dir);
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
        QVERIFY2(QFile::exists(dir + "/" + f), f);
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QCOMPARE(w.localDir(), dir);
    QVERIFY2(w.nextHint().isEmpty(), qPrintable(w.nextHint()));
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("convert"));
    w.setConvertWanted(false); // run as published: Check looks at the downloaded folder
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QCOMPARE(w.modelDir(), dir);
    QSignalSpy checked(&w, &WizardController::checkFinished);
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("check"));
    QVERIFY(checked.wait(60000));
    QCOMPARE(w.checkState(), QStringLiteral("done"));
    QCOMPARE(w.checkReport().value("architecture").toString(),
             QStringLiteral("MixtralForCausalLM"));
}

void TstWizardHub::pauseAndResumeFetchOnlyTheRest() {
    QTemporaryDir parent;
    WizardController w(nullptr, nullptr);
    QVERIFY(toDownloadPage(w, parent.path()));
    QSignalSpy finished(&w, &WizardController::downloadFinished);
    w.startDownload();
    // Paused in the middle of the weights (sampled progress at 10 Hz).
    QVERIFY(waitFor([&] { return w.downloadProgress() > 0.2; }));
    w.pauseDownload();
    QVERIFY(finished.wait(30000));
    QCOMPARE(finished.takeFirst().at(0).toString(), QStringLiteral("paused"));
    const QString part = w.downloadDir() + "/model.safetensors.part";
    const qint64 kept = QFileInfo(part).size();
    QVERIFY2(kept > 0, qPrintable(part));
    const qint64 size = QFileInfo(COLI_SOURCE_DIR "/resources/models/colibri-moe-tiny/"
                                                  "model.safetensors")
                            .size();
    QVERIFY(kept < size);
    const QJsonObject before = stats()["bytes_sent"].toObject();
    const QString key = QString::fromLatin1(kTiny) + "/model.safetensors";
    const double sentBefore = before[key].toDouble();

    w.startDownload(); // Resume
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.takeFirst().at(0).toString(), QStringLiteral("done"));
    const double sentForResume = stats()["bytes_sent"].toObject()[key].toDouble() - sentBefore;
    // What the paused run's server thread still wrote before it saw the closed connection may
    // count here: one chunk's worth, far less than the kept part (over 5 MB at 20 %).
    QVERIFY(kept > 2 * (1 << 20));
    QVERIFY2(sentForResume <= double(size - kept + (1 << 20)),
             qPrintable(QStringLiteral("resumed with %1 bytes, %2 were missing")
                            .arg(sentForResume)
                            .arg(size - kept)));
    QCOMPARE(QFileInfo(w.downloadDir() + "/model.safetensors").size(), size);
    QVERIFY(!QFile::exists(part));
}

void TstWizardHub::cancelDeletesThePartialFiles() {
    QTemporaryDir parent;
    WizardController w(nullptr, nullptr);
    QVERIFY(toDownloadPage(w, parent.path()));
    QSignalSpy finished(&w, &WizardController::downloadFinished);
    w.startDownload();
    QVERIFY(waitFor([&] { return w.downloadProgress() > 0.2; }));
    w.cancelDownload();
    QVERIFY(finished.wait(30000));
    QCOMPARE(finished.takeFirst().at(0).toString(), QStringLiteral("cancelled"));
    QVERIFY(!QFile::exists(w.downloadDir() + "/model.safetensors.part"));
    QVERIFY(!w.canNext());
}

void TstWizardHub::anUnfinishedDownloadIsOfferedAtStart() {
    QTemporaryDir parent;
    const QString dir = pausedDownload(nullptr, parent.path()); // the app closes paused
    QVERIFY(!dir.isEmpty());
    WizardController w(nullptr, nullptr); // the next start
    QVERIFY(waitFor([&] { return !w.unfinishedDownload().isEmpty(); }));
    QCOMPARE(w.unfinishedDownload().value("repo").toString(), QString::fromLatin1(kTiny));
    QCOMPARE(w.unfinishedDownload().value("dir").toString(), dir);
    QCOMPARE(w.unfinishedDownload().value("state").toString(), QStringLiteral("paused"));
    QSignalSpy inspected(&w, &WizardController::sourceInspected);
    w.resumeUnfinished();
    QVERIFY(inspected.wait(30000));
    QCOMPARE(w.pageName(), QStringLiteral("download"));
    QCOMPARE(w.downloadDir(), dir);
    QVERIFY(!w.repoPlan().value("presentText").toString().isEmpty()); // the .part counts
    w.setSpaceMargin(0); // as toDownloadPage: this machine's disk must not decide the test
    QSignalSpy finished(&w, &WizardController::downloadFinished);
    w.startDownload();
    QVERIFY(finished.wait(60000));
    QVERIFY2(w.downloadError().isEmpty(), qPrintable(w.downloadError()));
    QCOMPARE(w.downloadState(), QStringLiteral("done"));
    QVERIFY(QFile::exists(dir + "/model.safetensors"));
}

void TstWizardHub::theRecordGoesToTheSettingsDatabase() {
    // A usage database chosen in Settings: the download record goes there, and the next start
    // with the same settings offers the paused download from it.
    QTemporaryDir parent, config;
    qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
    AppSettings settings{QString()};
    const QString db = config.path() + "/elsewhere/usage.sqlite";
    QVERIFY(QDir().mkpath(config.path() + "/elsewhere"));
    settings.setUsageDatabase(db);
    const QString dir = pausedDownload(&settings, parent.path());
    QVERIFY(!dir.isEmpty());
    QVERIFY2(QFile::exists(db), "no download record in the Settings' database");
    WizardController w(nullptr, &settings);
    QVERIFY(waitFor([&] { return !w.unfinishedDownload().isEmpty(); }));
    QCOMPARE(w.unfinishedDownload().value("dir").toString(), dir);
}

QTEST_GUILESS_MAIN(TstWizardHub)
#include "tst_wizard_hub.moc"
