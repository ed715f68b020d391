// The model wizard in the real window under Xvfb (the CTest command starts xvfb-run): with no
// model known the window opens on it; the Models view's "Get a model…" reaches it; the pages are
// walked with real clicks on Next and Back, from a fixture checkpoint on this computer through
// the conversion (progress bar, cancel) to Open, which loads the container and lists it, and
// Start chatting, which shows the chat with the model ready. A PNG of every page in the light and
// dark themes at 960 x 600 and 1600 x 1000 goes to build/release/screenshots/wizard-*.png. The
// pages of what this build cannot do yet (Hub search and download, plan and doctor, mirror)
// are shown saying so.
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "wizard/wizard_controller.h"

#include "hub_test_server.h"

#include "convert/manifest.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace coli;
using namespace coli::app;
namespace fs = std::filesystem;

namespace {
const QString kCheckpoint = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

struct App {
    QTemporaryDir config;
    std::unique_ptr<AppSettings> settings;
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    App() {
        qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
        // No default model and nothing remembered: no model is known.
        settings = std::make_unique<AppSettings>(QString());
        settings->setTheme(QStringLiteral("light"));
        WorkerOptions wo;
        wo.threads = 1;
        controller = std::make_unique<EngineController>(wo);
        connectSettings(settings.get(), controller.get(), 1);
        engine = std::make_unique<QQmlApplicationEngine>();
        QString error;
        window = createMainWindow(*engine, controller.get(), {QStringLiteral(COLI_QML_IMPORT_DIR)},
                                  &error, settings.get());
        if (!window) qWarning("%s", qPrintable(error));
        if (window) {
            window->resize(960, 600);
            window->show();
        }
    }
    ~App() {
        if (controller) controller->shutdown();
        engine.reset();
        controller.reset();
    }
    QQuickItem* item(const char* name) const {
        return window ? window->findChild<QQuickItem*>(QString::fromLatin1(name)) : nullptr;
    }
    WizardController* wizard() const {
        return qobject_cast<WizardController*>(window->property("wizard").value<QObject*>());
    }
    QString viewShown() const {
        QQuickItem* stack = item("viewStack");
        return stack ? stack->property("currentName").toString() : QString();
    }
};

// A delegate (a ListView's row) by object name: delegates are found through the item tree only.
QQuickItem* delegateItem(const App& app, const QString& name) {
    QList<QQuickItem*> found;
    collectItems(app.window->contentItem(), name, &found);
    return found.isEmpty() ? nullptr : found.first();
}

void click(QQuickWindow* w, QQuickItem* item) {
    QVERIFY(item);
    QVERIFY2(item->isVisible() && item->isEnabled(), qPrintable(item->objectName()));
    const QPointF c = item->mapToScene(QPointF(item->width() / 2, item->height() / 2));
    QTest::mouseClick(w, Qt::LeftButton, {}, c.toPoint());
}

// The page in both themes at both sizes; leaves the window light and small.
void shoot(App& app, const QString& name) {
    const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
    QDir().mkpath(dir);
    struct Size {
        const char* tag;
        int w, h;
    };
    for (const char* theme : {"light", "dark"}) {
        app.settings->setTheme(QString::fromLatin1(theme));
        for (const Size s : {Size{"small", 960, 600}, Size{"large", 1600, 1000}}) {
            app.window->resize(s.w, s.h);
            QTest::qWait(200);
            const QString file =
                QStringLiteral("%1/wizard-%2-%3-%4.png").arg(dir, name, theme, s.tag);
            QVERIFY(app.window->grabWindow().save(file));
        }
    }
    app.settings->setTheme(QStringLiteral("light"));
    app.window->resize(960, 600);
    QTest::qWait(100);
}
} // namespace

class TstWizardView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init() { g_warnings.clear(); }
    void walksThePagesToAChat();
    void walksFromTheHub();
};

void TstWizardView::initTestCase() {
    QVERIFY2(QFile::exists(kCheckpoint + "/config.json"),
             "fixtures missing: run the fixtures_generate test of the main build");
    g_previous = qInstallMessageHandler(recordWarnings);
}

void TstWizardView::walksThePagesToAChat() {
    QTemporaryDir target;
    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    WizardController* w = app.wizard();
    QVERIFY(w);
    // No model known: the window opens on the wizard.
    QCOMPARE(app.viewShown(), QStringLiteral("wizard"));
    QVERIFY(!app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("1-model-empty"));

    // The Hub: says it is not in this build; the token field is there.
    click(app.window, app.item("wizardSourceHub"));
    QTRY_COMPARE(w->sourceKind(), QStringLiteral("hub"));
    QTRY_VERIFY(app.item("wizardTokenField") != nullptr);
    shoot(app, QStringLiteral("1-model-hub"));
    click(app.window, app.item("wizardSourceLocal"));
    QTRY_COMPARE(w->sourceKind(), QStringLiteral("local"));

    // A folder on this computer (the folder browser's own behaviour is tst_app_ui's).
    QSignalSpy inspected(w, &WizardController::sourceInspected);
    w->chooseLocalFolder(kCheckpoint);
    QVERIFY(inspected.wait(30000));
    QTRY_VERIFY(!w->busy());
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("1-model-chosen"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("place"));

    QSignalSpy checked(w, &WizardController::spaceChecked);
    w->chooseTargetParent(target.path());
    QVERIFY(checked.wait(30000));
    QTRY_VERIFY(!w->busy());
    shoot(app, QStringLiteral("2-place"));
    // Back and forth with real clicks.
    click(app.window, app.item("wizardBack"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("search"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("place"));
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("download"));
    shoot(app, QStringLiteral("3-download"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("convert"));
    QVERIFY(!app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("4-convert-ready"));

    QSignalSpy finished(w, &WizardController::convertFinished);
    click(app.window, app.item("wizardConvertButton"));
    QVERIFY(finished.count() > 0 || finished.wait(60000));
    QCOMPARE(w->convertState(), QStringLiteral("done"));
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    QTRY_COMPARE(app.item("wizardConvertProgress")->property("value").toDouble(), 1.0);
    shoot(app, QStringLiteral("4-convert-done"));
    QSignalSpy doctorDone(w, &WizardController::checkFinished);
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("check"));
    QVERIFY(doctorDone.count() > 0 || doctorDone.wait(60000));
    QVERIFY2(w->checkReport().value("ready").toBool(), qPrintable(w->nextHint()));
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("5-check"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("mirror"));
    shoot(app, QStringLiteral("6-mirror"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("open"));
    QVERIFY(!app.item("wizardNext")->isVisible());
    shoot(app, QStringLiteral("7-open"));

    const QString dir = target.path() + "/qwen3moe-colibri";
    QVERIFY(convert::isContainerDir(dir.toStdString()));
    click(app.window, app.item("wizardOpenButton"));
    QTRY_VERIFY_WITH_TIMEOUT(w->openState() == QStringLiteral("ready"), 60000);
    QCOMPARE(app.controller->modelDir(), dir);
    QTRY_VERIFY(app.item("wizardStartChat")->isVisible());
    shoot(app, QStringLiteral("7-open-ready"));
    bool listed = false;
    for (const QVariant& row : app.settings->models())
        listed = listed || row.toMap().value("path").toString() == dir;
    QVERIFY2(listed, "the opened model is not in the Models list");

    click(app.window, app.item("wizardStartChat"));
    QTRY_COMPARE(app.viewShown(), QStringLiteral("chat"));
    QCOMPARE(app.controller->loadState(), QStringLiteral("ready"));

    // The Models view reaches the wizard again.
    QMetaObject::invokeMethod(app.window, "showView", Q_ARG(QVariant, QStringLiteral("models")));
    QTRY_COMPARE(app.viewShown(), QStringLiteral("models"));
    shoot(app, QStringLiteral("0-models-view"));
    click(app.window, app.item("getModelButton"));
    QTRY_COMPARE(app.viewShown(), QStringLiteral("wizard"));
    shoot(app, QStringLiteral("8-reopened"));

    for (const QString& warning : g_warnings)
        QVERIFY2(!warning.contains(QStringLiteral("qml"), Qt::CaseInsensitive),
                 qPrintable(warning));
}

void TstWizardView::walksFromTheHub() {
    hub_test::TempDir repos;
    const fs::path tiny = repos.path() / "tiny";
    fs::copy(COLI_SOURCE_DIR "/resources/models/colibri-moe-tiny", tiny,
             fs::copy_options::recursive);
    // Slow enough to pause in the middle of the weights.
    hub_test::writeBytes(tiny / "_hub.json",
                         R"({"downloads": 1234, "behaviour": {"throttle": 4000000}})");
    hub_test::HubServerOptions o;
    o.repos = {{"test-org/colibri-moe-tiny", tiny.string()}};
    std::string error;
    auto server = hub_test::HubServer::start(o, &error);
    QVERIFY2(server, error.c_str());
    QTemporaryDir home, target;
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(server->endpoint()));
    qputenv("HF_HOME", (home.path() + "/hf").toUtf8());
    qputenv("XDG_DATA_HOME", (home.path() + "/data").toUtf8());
    qunsetenv("HF_TOKEN");
    qputenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/colibri-test-bus");

    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    WizardController* w = app.wizard();
    QVERIFY(w);
    click(app.window, app.item("wizardSourceHub"));
    QTRY_COMPARE(w->sourceKind(), QStringLiteral("hub"));
    QSignalSpy searched(w, &WizardController::searchFinished);
    app.item("wizardSearchField")->setProperty("text", QStringLiteral("colibri"));
    click(app.window, app.item("wizardSearchButton"));
    QVERIFY(searched.count() > 0 || searched.wait(30000));
    QVERIFY2(w->searchResults().size() == 1, qPrintable(w->hubStatus()));
    QTRY_VERIFY(delegateItem(app, QStringLiteral("wizardSearchRow0")) != nullptr);
    QCOMPARE(delegateItem(app, QStringLiteral("wizardSearchFlag0"))->property("text").toString(),
             QStringLiteral("✓ runs here"));
    shoot(app, QStringLiteral("hub-1-search"));
    QSignalSpy inspected(w, &WizardController::sourceInspected);
    click(app.window, delegateItem(app, QStringLiteral("wizardSearchRow0")));
    QVERIFY(inspected.count() > 0 || inspected.wait(30000));
    QTRY_VERIFY(!w->busy());
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("hub-1-chosen"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("place"));
    QSignalSpy checked(w, &WizardController::spaceChecked);
    w->chooseTargetParent(target.path());
    QVERIFY(checked.wait(30000));
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("hub-2-place"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("download"));
    QVERIFY(!app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("hub-3-download-ready"));

    QSignalSpy finished(w, &WizardController::downloadFinished);
    click(app.window, app.item("wizardDownloadButton"));
    QTRY_VERIFY_WITH_TIMEOUT(w->downloadProgress() > 0.3, 30000);
    click(app.window, app.item("wizardPauseDownload"));
    QVERIFY(finished.count() > 0 || finished.wait(30000));
    QCOMPARE(w->downloadState(), QStringLiteral("paused"));
    shoot(app, QStringLiteral("hub-3-download-paused"));
    // Start over: the paused download is offered on the first page, as at the next start.
    click(app.window, app.item("wizardRestart"));
    QTRY_VERIFY(app.item("wizardResumeUnfinished") &&
                app.item("wizardResumeUnfinished")->isVisible());
    shoot(app, QStringLiteral("hub-0-unfinished"));
    click(app.window, app.item("wizardResumeUnfinished"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("download"));
    QTRY_VERIFY(!w->busy());
    finished.clear();
    click(app.window, app.item("wizardDownloadButton")); // Resume
    QVERIFY(finished.wait(60000));
    QCOMPARE(w->downloadState(), QStringLiteral("done"));
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    shoot(app, QStringLiteral("hub-3-download-done"));

    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("convert"));
    click(app.window, app.item("wizardConvertNo")); // run as published
    QTRY_VERIFY(app.item("wizardNext")->isEnabled());
    QSignalSpy doctorDone(w, &WizardController::checkFinished);
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("check"));
    QVERIFY(doctorDone.count() > 0 || doctorDone.wait(60000));
    QCOMPARE(w->checkState(), QStringLiteral("done"));
    shoot(app, QStringLiteral("hub-5-check"));
    const QString dir = target.path() + "/test-org--colibri-moe-tiny";
    QCOMPARE(w->modelDir(), dir);
    QVERIFY2(w->checkReport().value("ready").toBool(), qPrintable(w->nextHint()));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("mirror"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("open"));
    click(app.window, app.item("wizardOpenButton"));
    QTRY_VERIFY_WITH_TIMEOUT(w->openState() == QStringLiteral("ready"), 60000);
    QCOMPARE(app.controller->modelDir(), dir);

    for (const QString& warning : g_warnings)
        QVERIFY2(!warning.contains(QStringLiteral("qml"), Qt::CaseInsensitive),
                 qPrintable(warning));
}

int main(int argc, char** argv) {
    QApplication app(argc, argv); // the window's Charts view needs Widgets
    QApplication::setOrganizationName(QStringLiteral("Colibri"));
    QApplication::setApplicationName(QStringLiteral("Colibri Desktop"));
    TstWizardView t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_wizard_view.moc"
