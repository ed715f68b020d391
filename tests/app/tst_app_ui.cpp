// The window's details under Xvfb (the CTest command starts xvfb-run): the folder dialog opens
// (at the folder holding the current model) without QML warnings, message bubbles fit their text,
// the keyboard focus returns to the composer, a model without a chat template fails at load with
// tokenizer_config.json named, and the context-full message gives the model's context length.
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"
#include "engine_worker.h"
#include "gui_test_support.h"

#include <QAccessible>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFontMetrics>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <atomic>

#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

struct App {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    explicit App(const GenerateParams& params = {}) {
        WorkerOptions wo;
        wo.threads = 2;
        controller = std::make_unique<EngineController>(wo);
        SamplingOverrides s;
        s.temperature = 0; // greedy: quick and repeatable
        controller->setGenerateParams(params, s);
        engine = std::make_unique<QQmlApplicationEngine>();
        QString error;
        window = createMainWindow(*engine, controller.get(), {QStringLiteral(COLI_QML_IMPORT_DIR)},
                                  &error);
        if (!window) qWarning("%s", qPrintable(error));
        if (window) {
            window->resize(1000, 720);
            window->show();
        }
    }
    ~App() {
        if (controller) controller->shutdown();
        engine.reset();
        controller.reset();
    }
    template <class T = QQuickItem> T* find(const char* name) const {
        return window ? window->findChild<T*>(QString::fromLatin1(name)) : nullptr;
    }
};

// A copy of the fixture model in `dir` (weights linked) with edits to two JSON files.
bool copyModel(const QString& dir, const std::function<void(QJsonObject&)>& editConfig,
               const std::function<void(QJsonObject&)>& editTokenizerConfig) {
    for (const QString& f : QDir(kModel).entryList(QDir::Files)) {
        const QString from = kModel + "/" + f, to = dir + "/" + f;
        if (f == "config.json" || f == "tokenizer_config.json") {
            QFile in(from);
            if (!in.open(QIODevice::ReadOnly)) return false;
            QJsonObject o = QJsonDocument::fromJson(in.readAll()).object();
            (f == "config.json" ? editConfig : editTokenizerConfig)(o);
            QFile out(to);
            if (!out.open(QIODevice::WriteOnly)) return false;
            out.write(QJsonDocument(o).toJson());
        } else if (!QFile::link(from, to)) {
            return false;
        }
    }
    return true;
}

void saveScreenshot(QQuickWindow* w, const QString& name) {
    QTest::qWait(150);
    const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
    QDir().mkpath(dir);
    w->grabWindow().save(dir + "/" + name);
    qInfo("screenshot: %s/%s", qPrintable(dir), qPrintable(name));
}
} // namespace

class TstAppUi : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init() { g_warnings.clear(); }
    void modelsViewAndFolderBrowser();
    void tooLongMessageIsRefusedBeforeSending();
    void defaultWindowSizeFitsASmallScreen();
    void everyViewInBothThemesAndSizes();
    void tabReachesNamedControls();
    void engineRefusesTooLongInWords();
    void bubblesFitTheirText();
    void focusReturnsToComposer();
    void modelWithoutTemplateFailsAtLoad();
    void generationConfigWarningsAreShown();
    void contextFullNamesContextLength();
    void shortcutsWorkAfterClickingABubble();
};

void TstAppUi::initTestCase() {
    QVERIFY2(QFileInfo::exists(kModel + "/config.json"),
             qPrintable("fixture model missing (run the coli_fixtures setup test): " + kModel));
    g_previous = qInstallMessageHandler(recordWarnings);
}

// The Models view: the default and recently loaded folders; "Add folder…" opens a browser at the
// folder holding the current model that shows files as well as folders, selects nothing by
// itself, and opens the folder it shows (only when it holds config.json).
void TstAppUi::modelsViewAndFolderBrowser() {
    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    app.controller->loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(app.controller->loadState(), QStringLiteral("ready"), 120000);
    QTest::keyClick(app.window, Qt::Key_O, Qt::ControlModifier);
    auto* views = app.find<QObject>("viewStack");
    QVERIFY(views);
    QTRY_COMPARE(views->property("currentName").toString(), QStringLiteral("models"));
    // The loaded folder is listed (recent), with its size on disk.
    QList<QQuickItem*> sizes;
    QTRY_VERIFY((sizes.clear(), collectItems(app.window->contentItem(), "modelSize", &sizes),
                 !sizes.isEmpty()));
    QVERIFY2(sizes.first()->property("text").toString().contains("on disk"),
             qPrintable(sizes.first()->property("text").toString()));

    auto* add = app.find("addFolderButton");
    QVERIFY(add);
    g_warnings.clear();
    QVERIFY(QMetaObject::invokeMethod(add, "clicked"));
    auto* browser = app.window->findChild<QObject*>(QStringLiteral("folderBrowser"));
    QVERIFY(browser);
    QTRY_VERIFY_WITH_TIMEOUT(browser->property("visible").toBool(), 5000);
    const QString parent = QFileInfo(kModel).absolutePath();
    QCOMPARE(browser->property("path").toString(), parent);
    QTest::qWait(200);
    saveScreenshot(app.window, "folder_browser.png");
    // A missing QML module (Qt.labs.folderlistmodel) shows as a warning.
    QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
    auto* entries = app.find<QQuickItem>("folderEntries");
    auto* open = app.find<QQuickItem>("folderOpen");
    QVERIFY(entries && open);
    QCOMPARE(entries->property("currentIndex").toInt(), -1); // nothing preselected
    QVERIFY(!open->isEnabled());                             // the fixtures folder is not a model
    // Into the model folder: its files are listed, nothing is selected, Open is enabled.
    QVERIFY(QMetaObject::invokeMethod(browser, "goTo", Q_ARG(QVariant, kModel)));
    auto listed = [&](const QString& file) { // the folder is listed asynchronously
        QList<QQuickItem*> rows;
        collectItems(entries, QString(), &rows);
        for (QQuickItem* r : rows)
            if (r->property("text").toString().endsWith(file)) return true;
        return false;
    };
    QTRY_VERIFY2(listed(QStringLiteral("config.json")), "config.json is not listed");
    QVERIFY(listed(QStringLiteral("tokenizer.json")));
    QCOMPARE(entries->property("currentIndex").toInt(), -1);
    QTRY_VERIFY(open->isEnabled());
    saveScreenshot(app.window, "folder_browser_model.png");
    QSignalSpy loads(app.controller.get(), &EngineController::loadStateChanged);
    QVERIFY(QMetaObject::invokeMethod(open, "clicked"));
    QTRY_VERIFY(!browser->property("visible").toBool());
    QTRY_COMPARE_WITH_TIMEOUT(app.controller->loadState(), QStringLiteral("ready"), 120000);
    QCOMPARE(app.controller->modelDir(), kModel);
    QTRY_COMPARE(views->property("currentName").toString(), QStringLiteral("chat"));
    auto* input = app.find("composerInput");
    QVERIFY(input);
    QTRY_VERIFY(input->hasActiveFocus());
}

void TstAppUi::bubblesFitTheirText() {
    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    ChatModel& chat = *app.controller->chatModel();
    chat.appendMessage(QStringLiteral("user"), QStringLiteral("Hi"));
    const QString error = QStringLiteral(
        "prompt has 63 tokens, more than the model's context length (40): start a new chat");
    chat.fail(chat.beginAssistant(), error);
    QTest::qWait(200);
    QList<QQuickItem*> texts, errors;
    collectItems(app.window->contentItem(), QStringLiteral("messageText"), &texts);
    collectItems(app.window->contentItem(), QStringLiteral("messageError"), &errors);
    QQuickItem* hi = nullptr;
    for (QQuickItem* t : texts)
        if (t->property("text").toString() == "Hi") hi = t;
    QVERIFY(hi);
    QCOMPARE(hi->property("lineCount").toInt(), 1);
    QQuickItem* err = nullptr;
    for (QQuickItem* e : errors)
        if (e->isVisible()) err = e; // the user bubble has a hidden, empty one
    QVERIFY(err);
    QCOMPARE(err->property("text").toString(), error);
    // 13 words: wrapped to the bubble's maximum width, not one word per line.
    QVERIFY2(err->width() >= 300, qPrintable(QString::number(err->width())));
    QVERIFY2(err->property("lineCount").toInt() <= 3,
             qPrintable(QString::number(err->property("lineCount").toInt())));
    saveScreenshot(app.window, "bubbles.png");
}

void TstAppUi::focusReturnsToComposer() {
    GenerateParams params;
    params.maxNewTokens = 20000;
    params.ignoreEos = true;
    App app(params);
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    auto* input = app.find("composerInput");
    auto* sendButton = app.find("sendButton");
    auto* newChatButton = app.find("newChatButton");
    QVERIFY(input && sendButton && newChatButton);
    QSignalSpy finished(&c, &EngineController::answerFinished);

    // Stop: clicking the button takes the focus; it must come back to the composer.
    QVERIFY(c.send(QStringLiteral("Hello")));
    QTRY_VERIFY_WITH_TIMEOUT(!c.chatModel()->at(1).text.isEmpty(), 60000);
    sendButton->forceActiveFocus();
    QVERIFY(!input->hasActiveFocus());
    QVERIFY(QMetaObject::invokeMethod(sendButton, "clicked"));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    QTRY_VERIFY(input->hasActiveFocus());

    // New chat.
    newChatButton->forceActiveFocus();
    QVERIFY(QMetaObject::invokeMethod(newChatButton, "clicked"));
    QTRY_VERIFY(input->hasActiveFocus());

    // An answer that ends by itself.
    GenerateParams shortAnswer;
    shortAnswer.maxNewTokens = 3;
    c.setGenerateParams(shortAnswer, c.samplingOverrides());
    QVERIFY(c.send(QStringLiteral("Hello")));
    newChatButton->forceActiveFocus();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
    QTRY_VERIFY(input->hasActiveFocus());
}

void TstAppUi::modelWithoutTemplateFailsAtLoad() {
    QTemporaryDir dir;
    QVERIFY(copyModel(
        dir.path(), [](QJsonObject&) {}, [](QJsonObject& o) { o.remove("chat_template"); }));
    App app;
    QVERIFY(app.window);
    app.controller->loadModel(dir.path());
    QTRY_COMPARE_WITH_TIMEOUT(app.controller->loadState(), QStringLiteral("error"), 120000);
    const QString msg = app.controller->errorText();
    QVERIFY2(msg.contains(dir.path() + "/tokenizer_config.json"), qPrintable(msg));
    QVERIFY2(msg.contains("chat template"), qPrintable(msg));
    QVERIFY(!app.controller->send(QStringLiteral("Hi")));
    auto* text = app.find("errorText");
    QVERIFY(text);
    QTRY_COMPARE(text->property("text").toString(), msg);
    saveScreenshot(app.window, "no_template.png");
}

void TstAppUi::contextFullNamesContextLength() {
    constexpr int kContext = 48;
    QTemporaryDir dir;
    QVERIFY(copyModel(
        dir.path(), [](QJsonObject& o) { o["max_position_embeddings"] = kContext; },
        [](QJsonObject&) {}));
    GenerateParams params;
    params.maxNewTokens = 20000;
    params.ignoreEos = true;
    App app(params);
    QVERIFY(app.window);
    EngineController& c = *app.controller;
    c.loadModel(dir.path());
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QCOMPARE(c.contextLength(), kContext);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(QStringLiteral("Hi")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QCOMPARE(c.chatModel()->at(1).stopReason, QStringLiteral("context full"));
    QVERIFY2(c.errorText().contains(QStringLiteral("(%1 tokens)").arg(kContext)),
             qPrintable(c.errorText()));
    // A notice, not an error, and it does not send the user to a new chat: the chat goes on.
    QCOMPARE(c.noticeKind(), QStringLiteral("info"));
    QVERIFY2(!c.errorText().contains(QStringLiteral("new chat")), qPrintable(c.errorText()));
    QVERIFY2(c.errorText().contains(QStringLiteral("You can go on")), qPrintable(c.errorText()));
    auto* icon = app.find("bannerIcon");
    QVERIFY(icon);
    QTRY_COMPARE(icon->property("text").toString(), QStringLiteral("ℹ"));
    saveScreenshot(app.window, "context_full_notice.png");
    // A second message: the first exchange is left out of the prompt (rolling window) and the
    // window says so; the turn runs.
    QVERIFY(c.send(QStringLiteral("More")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
    QVERIFY2(c.chatModel()->at(3).error.isEmpty(), qPrintable(c.chatModel()->at(3).error));
    QVERIFY2(c.errorText().contains(QStringLiteral("left out of the prompt")) ||
                 c.chatModel()->at(3).stopReason == QStringLiteral("context full"),
             qPrintable(c.errorText()));
    // A message that cannot fit even alone: a user-facing error, no internal status name.
    QString huge;
    for (int i = 0; i < 200; ++i)
        huge += QStringLiteral("word ");
    if (c.errorText().contains(QStringLiteral("left out of the prompt")))
        QCOMPARE(c.noticeKind(), QStringLiteral("info"));
    QVERIFY(!c.send(huge)); // refused before sending (tooLongMessageIsRefusedBeforeSending)
    QCOMPARE(c.chatModel()->rowCount(), 4);
    const QString err = c.errorText();
    QVERIFY2(err.contains("Shorten it or split it"), qPrintable(err));
    QVERIFY2(!err.contains("Invalid argument"), qPrintable(err));
}

// A generation_config.json value the sampler cannot use is ignored at load; the window says so
// (LoadedModel::warnings()), naming the file and the key.
void TstAppUi::generationConfigWarningsAreShown() {
    QTemporaryDir dir;
    QVERIFY(copyModel(
        dir.path(), [](QJsonObject&) {}, [](QJsonObject&) {}));
    QFile::remove(dir.path() + "/generation_config.json");
    QFile gc(dir.path() + "/generation_config.json");
    QVERIFY(gc.open(QIODevice::WriteOnly));
    gc.write(R"({"temperature": -2.0, "top_k": 20})");
    gc.close();
    App app;
    EngineController& c = *app.controller;
    c.loadModel(dir.path());
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QTRY_VERIFY_WITH_TIMEOUT(c.errorText().contains(QStringLiteral("generation_config.json")),
                             5000);
    QVERIFY2(c.errorText().contains(QStringLiteral("temperature")), qPrintable(c.errorText()));
}

// Clicking inside a message bubble gives its text the focus; the window's shortcuts must still
// work (they did nothing until the composer was clicked again).
void TstAppUi::shortcutsWorkAfterClickingABubble() {
    GenerateParams params;
    params.maxNewTokens = 20000;
    params.ignoreEos = true;
    App app(params);
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    auto clickBubble = [&] {
        QTest::qWait(100); // a frame: a new row's delegate, or a view just shown
        QList<QQuickItem*> texts;
        collectItems(app.window->contentItem(), QStringLiteral("messageText"), &texts);
        QQuickItem* t = nullptr;
        for (QQuickItem* item : texts)
            if (item->isVisible() && item->height() > 5) t = item;
        if (!t) return false;
        const QPointF p = t->mapToScene(QPointF(5, t->height() / 2));
        QTest::mouseClick(app.window, Qt::LeftButton, {}, p.toPoint());
        QTest::qWait(50);
        if (!t->hasActiveFocus())
            qWarning() << "clicked" << t << t->property("text") << p << "focus is on"
                       << app.window->activeFocusItem();
        return t->hasActiveFocus();
    };

    // Escape stops the answer being written.
    QVERIFY(c.send(QStringLiteral("Hello")));
    QTRY_VERIFY_WITH_TIMEOUT(!c.chatModel()->at(1).text.isEmpty(), 60000);
    QVERIFY(clickBubble());
    QTest::keyClick(app.window, Qt::Key_Escape);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    QCOMPARE(c.chatModel()->at(1).stopReason, QStringLiteral("cancelled"));

    // Ctrl+O: the Models view opens (the place to choose a model).
    QVERIFY(clickBubble());
    QTest::keyClick(app.window, Qt::Key_O, Qt::ControlModifier);
    auto* views = app.find<QObject>("viewStack");
    QVERIFY(views);
    QTRY_COMPARE(views->property("currentName").toString(), QStringLiteral("models"));
    QTest::keyClick(app.window, Qt::Key_1, Qt::ControlModifier);
    QTRY_COMPARE(views->property("currentName").toString(), QStringLiteral("chat"));

    // Ctrl+N: a new chat.
    QVERIFY(clickBubble());
    QTest::keyClick(app.window, Qt::Key_N, Qt::ControlModifier);
    QTRY_COMPARE(c.chatModel()->rowCount(), 0);

    // Ctrl+Q quits (the QML engine's quit(), which main() connects to the application's).
    c.chatModel()->appendMessage(QStringLiteral("user"), QStringLiteral("Hi"));
    QVERIFY(clickBubble());
    QSignalSpy quit(app.engine.get(), &QQmlEngine::quit);
    QTest::keyClick(app.window, Qt::Key_Q, Qt::ControlModifier);
    QTRY_COMPARE(quit.count(), 1);
}

// A message that cannot fit the context alone is refused before anything is sent: the composer
// keeps the text, nothing is added to the conversation, and the banner says what to do in words.
void TstAppUi::tooLongMessageIsRefusedBeforeSending() {
    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QVERIFY(c.maxMessageTokens() > 0);
    QString huge;
    for (int i = 0; i < c.contextLength(); ++i)
        huge += QStringLiteral("word ");
    auto* input = app.find("composerInput");
    QVERIFY(input);
    input->setProperty("text", huge);
    input->forceActiveFocus();
    QTest::keyClick(app.window, Qt::Key_Return);
    QCOMPARE(c.chatModel()->rowCount(), 0);
    QVERIFY(!c.generating());
    QCOMPARE(input->property("text").toString(), huge); // kept, to be shortened
    const QString msg = c.errorText();
    QVERIFY2(msg.startsWith(QStringLiteral("This message is about ")), qPrintable(msg));
    QVERIFY2(msg.contains(QStringLiteral("the model reads at most %1.").arg(c.maxMessageTokens())),
             qPrintable(msg));
    QVERIFY2(msg.contains(QStringLiteral("Shorten it or split it")), qPrintable(msg));
    QVERIFY2(!msg.contains('>'), qPrintable(msg));
    QCOMPARE(c.noticeKind(), QStringLiteral("error"));
    // A short message is counted the same way and goes.
    QVERIFY(c.checkMessageLength(QStringLiteral("Hello there")).isEmpty());
    QVERIFY(c.countTokens(QStringLiteral("word word word")) >= 3);
    saveScreenshot(app.window, "too_long.png");
}

// The default size fits a 1000-px-high screen at 1.5x scaling: 667 logical px, less a panel and
// the title bar.
void TstAppUi::defaultWindowSizeFitsASmallScreen() {
    // A first start: no size kept from the windows of the tests before (the app keeps the size
    // a window was given).
    AppSettings(QString()).setWindowSize(QSize());
    QVERIFY(!AppSettings(QString()).windowSize().isValid());
    WorkerOptions wo;
    EngineController controller(wo);
    QQmlApplicationEngine engine;
    QString error;
    QQuickWindow* w =
        createMainWindow(engine, &controller, {QStringLiteral(COLI_QML_IMPORT_DIR)}, &error);
    QVERIFY2(w, qPrintable(error));
    QVERIFY2(w->height() <= 620, qPrintable(QString::number(w->height())));
    QVERIFY(w->width() <= 1000);
    QVERIFY(w->minimumHeight() <= w->height());
    controller.shutdown();
}

// Each view (sidebar button by click; the shortcut is tested above) in the light and dark
// themes, in a small (800x600) and a large (1600x1000) window: screenshots under
// screenshots/view-NAME-THEME-WxH.png, each not blank; the dark theme really is dark. The chat
// holds a message with an emoji (fonts-noto-color-emoji): its glyph exists, not a box.
void TstAppUi::everyViewInBothThemesAndSizes() {
    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    c.chatModel()->appendMessage(QStringLiteral("user"), QStringLiteral("Hi 😀 how are you?"));
    const int row = c.chatModel()->beginAssistant();
    c.chatModel()->appendText(row, QStringLiteral("Fine, thanks! 🐦"));
    c.chatModel()->finish(row, 5, 120.0, 0.05);
    const QFont font(QStringLiteral("DejaVu Sans"));
    QVERIFY2(QFontDatabase::families().contains(QStringLiteral("Noto Color Emoji")) ||
                 QFontMetrics(font).inFontUcs4(0x1F600),
             "no font has U+1F600: emoji show as boxes (install fonts-noto-color-emoji)");
    auto* settingsObj = app.window->property("appSettings").value<QObject*>();
    QVERIFY(settingsObj);
    auto* views = app.find<QObject>("viewStack");
    QVERIFY(views);
    const QStringList names = {"chat", "tiers", "brain", "atlas", "charts", "models", "settings"};
    for (const QString& theme : {QStringLiteral("light"), QStringLiteral("dark")}) {
        settingsObj->setProperty("theme", theme);
        for (const QSize size : {QSize(800, 600), QSize(1600, 1000)}) {
            app.window->resize(size);
            for (const QString& name : names) {
                QList<QQuickItem*> found; // Repeater delegates: walk the item tree
                collectItems(app.window->contentItem(), "sidebar_" + name, &found);
                QVERIFY2(found.size() == 1, qPrintable(name));
                QQuickItem* button = found.first();
                const QPointF p =
                    button->mapToScene(QPointF(button->width() / 2, button->height() / 2));
                QTest::mouseClick(app.window, Qt::LeftButton, {}, p.toPoint());
                QTRY_COMPARE(views->property("currentName").toString(), name);
                QTest::qWait(150);
                const QImage img = app.window->grabWindow();
                QCOMPARE(img.size() / img.devicePixelRatio(), size);
                const QString file = QStringLiteral("view-%1-%2-%3x%4.png")
                                         .arg(name, theme)
                                         .arg(size.width())
                                         .arg(size.height());
                const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
                QDir().mkpath(dir);
                QVERIFY(img.save(dir + "/" + file));
                // The background (a corner of the view area) follows the theme.
                const QColor bg = img.pixelColor(img.width() - 5, img.height() - 5);
                QVERIFY2(theme == "dark" ? bg.lightnessF() < 0.3 : bg.lightnessF() > 0.7,
                         qPrintable(file + ": " + bg.name()));
                QSet<QRgb> colours;
                for (int y = 0; y < img.height(); y += 3)
                    for (int x = 0; x < img.width(); x += 3)
                        colours.insert(img.pixel(x, y));
                QVERIFY2(colours.size() > 8, qPrintable(file + " is (nearly) blank"));
            }
        }
    }
    QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
}

// Tab walks the window's controls (out of the message box too, which would otherwise take a tab
// character): the sidebar's views, the header's New chat, each Settings control, and every
// control reached has an accessible name (what a screen reader says).
void TstAppUi::tabReachesNamedControls() {
    App app;
    QVERIFY(app.window);
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    auto* input = app.find("composerInput");
    QVERIFY(input);
    input->forceActiveFocus();
    QTRY_VERIFY(input->hasActiveFocus());
    auto nameOf = [](QQuickItem* item) {
        QAccessibleInterface* a = QAccessible::queryAccessibleInterface(item);
        return a ? a->text(QAccessible::Name) : QString();
    };
    auto walk = [&](int steps) {
        QStringList seen;
        for (int i = 0; i < steps; ++i) {
            QTest::keyClick(app.window, Qt::Key_Tab);
            QQuickItem* f = app.window->activeFocusItem();
            if (!f) return seen << QStringLiteral("<none>");
            const QString name = nameOf(f);
            if (name.isEmpty()) qWarning() << "control without an accessible name:" << f;
            seen << (f->objectName().isEmpty() ? name : f->objectName() + "=" + name);
            if (f == input) break; // round the chain
        }
        return seen;
    };
    QStringList chat = walk(40);
    QVERIFY2(input->property("text").toString().isEmpty(), "Tab typed into the message box");
    const QString chain = chat.join(" | ");
    qInfo("chat view tab chain: %s", qPrintable(chain));
    for (const char* name : {"sidebar_chat", "sidebar_settings", "newChatButton"})
        QVERIFY2(chain.contains(QLatin1String(name)), qPrintable(chain));
    QTest::keyClick(app.window, Qt::Key_4, Qt::ControlModifier); // Settings
    QStringList settings = walk(60);
    const QString schain = settings.join(" | ");
    qInfo("settings view tab chain: %s", qPrintable(schain));
    for (const char* name :
         {"Theme: Dark", "Forward-pass threads", "RAM budget", "How expert files are read",
          "Use these sampling values", "Usage database file"})
        QVERIFY2(schain.contains(QLatin1String(name)), qPrintable(schain));
    QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
}

// The engine thread's own check, for what the window's estimate cannot see (a system message):
// the same plain words, never "... > 48" or a status name.
void TstAppUi::engineRefusesTooLongInWords() {
    constexpr int kContext = 48;
    QTemporaryDir dir;
    QVERIFY(copyModel(
        dir.path(), [](QJsonObject& o) { o["max_position_embeddings"] = kContext; },
        [](QJsonObject&) {}));
    std::atomic<int> wakes{0};
    WorkerOptions wo;
    wo.threads = 2;
    EngineWorker worker(wo, [&] { ++wakes; });
    std::vector<EngineEvent> events;
    auto waitFor = [&](EventKind kind) {
        for (int i = 0; i < 6000; ++i) {
            worker.ring().drain([&](EngineEvent&& e) { events.push_back(std::move(e)); });
            for (const EngineEvent& e : events)
                if (e.kind == kind) return true;
            QThread::msleep(10);
        }
        return false;
    };
    Command load(CommandKind::Load);
    load.id = 1;
    load.dir = dir.path().toStdString();
    worker.post(load);
    QVERIFY(waitFor(EventKind::Loaded));
    auto generate = [&](uint64_t id, std::vector<ChatMessage> messages) {
        events.clear();
        Command g(CommandKind::Generate);
        g.id = id;
        g.messages = std::move(messages);
        g.params.maxNewTokens = 8;
        worker.post(g);
        if (!waitFor(EventKind::Failed)) return QString();
        for (const EngineEvent& e : events)
            if (e.kind == EventKind::Failed) return QString::fromStdString(e.text);
        return QString();
    };
    QString longText;
    for (int i = 0; i < 60; ++i)
        longText += QStringLiteral("word ");
    // A short system message and a long user message: the message's size and the limit.
    QString msg = generate(2, {{"system", "Be brief."}, {"user", longText.toStdString()}});
    QVERIFY2(msg.startsWith("This message is about ") && msg.contains("Shorten it or split it"),
             qPrintable(msg));
    QVERIFY2(!msg.contains('>') && !msg.contains("Invalid argument"), qPrintable(msg));
    qInfo("engine: %s", qPrintable(msg));
    // A system message that leaves no room: it is named as the thing to shorten.
    msg = generate(3, {{"system", longText.toStdString()}, {"user", "Hi"}});
    QVERIFY2(msg.startsWith("The system message is about ") &&
                 msg.contains("Shorten the system message"),
             qPrintable(msg));
    worker.quit();
}

int main(int argc, char** argv) {
    QTemporaryDir home; // keep the user's settings out of it
    qputenv("XDG_CONFIG_HOME", home.path().toLocal8Bit());
    QApplication app(argc, argv);
    TstAppUi t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_app_ui.moc"
