// The model wizard in the real window under Xvfb (the CTest command starts xvfb-run): with no
// model known the window opens on it; the Models view's "Get a model…" reaches it; the pages are
// walked with real clicks on Next and Back, from a fixture checkpoint on this computer through
// the conversion (progress bar, cancel) to Open, which loads the container and lists it, and
// Start chatting, which shows the chat with the model ready and answering a message typed into
// the composer. On the way: the doctor and the placement plan on the Check page (figures shown),
// a mirror planned and staged into a second folder on the Mirror page (it becomes the Settings'
// mirror folder and Open loads the model with it). The Hub walk searches, downloads with a pause
// and a resume, runs the model as published and answers too. A PNG of every page in the light
// and dark themes at 960 x 600 and 1600 x 1000 goes to build/release/screenshots/wizard-*.png.
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "wizard/wizard_controller.h"

#include "hub_test_server.h"

#include "chat_model.h"
#include "convert/manifest.h"
#include "mirror/mirror_receipt.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
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

// Scrolls the page (the Flickable) holding `item` until the item is inside the window, as a
// user would with the wheel on a short window.
void scrollIntoView(QQuickWindow* w, QQuickItem* item) {
    for (QQuickItem* p = item->parentItem(); p; p = p->parentItem()) {
        if (!p->inherits("QQuickFlickable")) continue;
        const QRectF r = item->mapRectToScene(QRectF(0, 0, item->width(), item->height()));
        const QRectF view = p->mapRectToScene(QRectF(0, 0, p->width(), p->height()))
                                .intersected(QRectF(0, 0, w->width(), w->height()));
        double dy = 0;
        if (r.bottom() > view.bottom()) dy = r.bottom() - view.bottom() + 12;
        if (r.top() - dy < view.top()) dy = r.top() - view.top() - 12;
        if (dy != 0) {
            const double most =
                std::max(0.0, p->property("contentHeight").toDouble() - p->height());
            p->setProperty("contentY",
                           std::clamp(p->property("contentY").toDouble() + dy, 0.0, most));
            QTest::qWait(50);
        }
        return;
    }
}

void click(QQuickWindow* w, QQuickItem* item) {
    QVERIFY(item);
    QVERIFY2(item->isVisible() && item->isEnabled(), qPrintable(item->objectName()));
    scrollIntoView(w, item);
    const QPointF c = item->mapToScene(QPointF(item->width() / 2, item->height() / 2));
    QTest::mouseClick(w, Qt::LeftButton, {}, c.toPoint());
}

// Types `text` into the chat's composer, presses Send and waits for the answer; returns the
// answer's text ("" when none came).
QString askInTheChat(App& app, const QString& text) {
    QQuickItem* input = app.item("composerInput");
    if (!input) return {};
    input->setProperty("text", text);
    QSignalSpy done(app.controller.get(), &EngineController::answerFinished);
    click(app.window, app.item("sendButton"));
    if (!done.wait(120000)) return {};
    ChatModel* chat = app.controller->chatModel();
    const QModelIndex last = chat->index(chat->rowCount() - 1);
    if (chat->data(last, ChatModel::RoleRole).toString() != QStringLiteral("assistant")) return {};
    return chat->data(last, ChatModel::TextRole).toString();
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
    QTemporaryDir target, mirrorDir, data;
    // The usage database of this run only (the plan and the mirror plan read learned heat).
    qputenv("XDG_DATA_HOME", data.path().toUtf8());
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

    // 1 GiB kept free, not 5 % of this machine's disk: how full the disk is must not decide it.
    w->setSpaceMargin(uint64_t(1) << 30);
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
    // The placement plan follows a ready check: its figures on the page.
    QTRY_VERIFY_WITH_TIMEOUT(w->planState() != QStringLiteral("running"), 120000);
    QVERIFY2(w->planState() == QStringLiteral("done"),
             qPrintable(w->planReport().value("error").toString()));
    QVERIFY(w->planReport().value("tokensPerSecond").toDouble() > 0);
    QVERIFY(w->planReport().value("fitText").toString().contains(QStringLiteral(" of ")));
    QTRY_VERIFY(app.item("wizardPlanFigures")->isVisible());
    QVERIFY(app.item("wizardPlanSpeed")->property("text").toString().contains("tokens/s"));
    shoot(app, QStringLiteral("5-check"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("mirror"));
    shoot(app, QStringLiteral("6-mirror"));
    // A mirror folder (on this test machine the same disk: the page says a mirror there adds no
    // speed, and staging works the same).
    QSignalSpy mirrorPlanned(w, &WizardController::mirrorPlanned);
    w->chooseMirrorFolder(mirrorDir.path());
    QVERIFY(mirrorPlanned.count() > 0 || mirrorPlanned.wait(30000));
    QTRY_VERIFY(!w->busy());
    QVERIFY2(w->mirrorPlan().value("error").toString().isEmpty(),
             qPrintable(w->mirrorPlan().value("error").toString()));
    QVERIFY(w->mirrorPlan().value("fileCount").toInt() > 0);
    QTRY_VERIFY(app.item("wizardMirrorPlan")->isVisible());
    QVERIFY(app.item("wizardMirrorSameDisk")->isVisible());
    shoot(app, QStringLiteral("6-mirror-plan"));
    QSignalSpy staged(w, &WizardController::mirrorFinished);
    click(app.window, app.item("wizardStageMirror"));
    QVERIFY(staged.count() > 0 || staged.wait(60000));
    QVERIFY2(w->mirrorState() == QStringLiteral("done"), qPrintable(w->mirrorError()));
    QVERIFY(
        QFile::exists(mirrorDir.path() + "/" + QString::fromLatin1(mirror::kMirrorReceiptName)));
    QCOMPARE(app.settings->mirrorFolder(), QDir::cleanPath(mirrorDir.path()));
    QTRY_VERIFY(!w->busy());
    QTRY_COMPARE(app.item("wizardMirrorProgress")->property("value").toDouble(), 1.0);
    shoot(app, QStringLiteral("6-mirror-staged"));
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
    // The model answers (loaded with the staged mirror: no load warning about it).
    QVERIFY(!askInTheChat(app, QStringLiteral("Hello")).isEmpty());
    shoot(app, QStringLiteral("9-chat"));

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
    QTemporaryDir home, target, mirrorDir;
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
    QVERIFY(!app.item("wizardSearchButton")->isEnabled()); // nothing typed yet
    app.item("wizardSearchField")->setProperty("text", QStringLiteral("colibri"));
    QTRY_VERIFY(app.item("wizardSearchButton")->isEnabled());
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
    // 1 GiB kept free, not 5 % of this machine's disk: how full the disk is must not decide it.
    w->setSpaceMargin(uint64_t(1) << 30);
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
    shoot(app, QStringLiteral("hub-4-convert"));
    QSignalSpy doctorDone(w, &WizardController::checkFinished);
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("check"));
    QVERIFY(doctorDone.count() > 0 || doctorDone.wait(60000));
    QCOMPARE(w->checkState(), QStringLiteral("done"));
    shoot(app, QStringLiteral("hub-5-check"));
    const QString dir = target.path() + "/test-org--colibri-moe-tiny";
    QCOMPARE(w->modelDir(), dir);
    QVERIFY2(w->checkReport().value("ready").toBool(), qPrintable(w->nextHint()));
    QTRY_VERIFY_WITH_TIMEOUT(w->planState() != QStringLiteral("running"), 120000);
    QCOMPARE(w->planState(), QStringLiteral("done"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("mirror"));
    // The downloaded checkpoint's expert file mirrored into a second folder.
    QSignalSpy mirrorPlanned(w, &WizardController::mirrorPlanned);
    w->chooseMirrorFolder(mirrorDir.path());
    QVERIFY(mirrorPlanned.count() > 0 || mirrorPlanned.wait(30000));
    QTRY_VERIFY(!w->busy());
    QVERIFY(w->mirrorPlan().value("fileCount").toInt() > 0);
    QSignalSpy staged(w, &WizardController::mirrorFinished);
    click(app.window, app.item("wizardStageMirror"));
    QVERIFY(staged.count() > 0 || staged.wait(60000));
    QVERIFY2(w->mirrorState() == QStringLiteral("done"), qPrintable(w->mirrorError()));
    QTRY_VERIFY(!w->busy());
    shoot(app, QStringLiteral("hub-6-mirror"));
    click(app.window, app.item("wizardNext"));
    QTRY_COMPARE(w->pageName(), QStringLiteral("open"));
    click(app.window, app.item("wizardOpenButton"));
    QTRY_VERIFY_WITH_TIMEOUT(w->openState() == QStringLiteral("ready"), 60000);
    QCOMPARE(app.controller->modelDir(), dir);
    shoot(app, QStringLiteral("hub-7-open"));
    click(app.window, app.item("wizardStartChat"));
    QTRY_COMPARE(app.viewShown(), QStringLiteral("chat"));
    QVERIFY(!askInTheChat(app, QStringLiteral("Tell me a fortune.")).isEmpty());
    shoot(app, QStringLiteral("hub-9-chat"));

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
