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

int main(int argc, char** argv) {
    QApplication app(argc, argv); // the window's Charts view needs Widgets
    QApplication::setOrganizationName(QStringLiteral("Colibri"));
    QApplication::setApplicationName(QStringLiteral("Colibri Desktop"));
    TstWizardView t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_wizard_view.moc"
