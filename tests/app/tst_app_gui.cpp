// The real window under Xvfb (the CTest command starts xvfb-run): loads the default fixture
// model, types a prompt into the composer and presses Enter, waits for the streamed answer,
// compares it with `coli generate --chat` for the same model, prompt, template, sampling and seed,
// checks the screenshot is not blank and saves it; checks a bad model folder shows its error in
// the window, and that quitting mid-answer returns promptly.
#include "app_options.h"
#include "app_window.h"
#include "engine_controller.h"
#include "gui_test_support.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");
const QString kShippedModel = QStringLiteral(COLI_SHIPPED_MODEL_DIR); // the app's default
const QString kPrompt = QStringLiteral("Tell me about hummingbirds.");
constexpr int kMaxTokens = 40;
constexpr uint64_t kSeed = 1234;
constexpr float kTemp = 0.7f, kTopP = 0.9f, kMinP = 0.02f;
constexpr int kTopK = 30;

// One window + controller, torn down in the order main() uses (controller joins first).
struct App {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    explicit App(const GenerateParams& params = {}, const SamplingOverrides& s = {},
                 size_t ringCapacity = WorkerOptions{}.ringCapacity) {
        WorkerOptions wo;
        wo.threads = defaultEngineThreads(); // as main() does
        wo.ringCapacity = ringCapacity;
        controller = std::make_unique<EngineController>(wo);
        controller->setGenerateParams(params, s);
        engine = std::make_unique<QQmlApplicationEngine>();
        QString error;
        window = createMainWindow(*engine, controller.get(), {QStringLiteral(COLI_QML_IMPORT_DIR)},
                                  &error);
        if (!window) qWarning("%s", qPrintable(error));
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

int distinctColours(const QImage& img, const QRect& r) {
    QSet<QRgb> colours;
    const QRect box = r.intersected(img.rect());
    for (int y = box.top(); y <= box.bottom(); y += 1)
        for (int x = box.left(); x <= box.right(); x += 1)
            colours.insert(img.pixel(x, y));
    return int(colours.size());
}
} // namespace

class TstAppGui : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void chatAnswerMatchesCli();
    void smallRingLosesNothing();
    void stopKeepsTextAndAllowsNextTurn();
    void stopInterruptsASlowTemplateRender();
    void badModelDirShowsErrorInWindow();
    void quitMidAnswerIsPrompt();
    void shippedDefaultModelChats();
    void longChatOutgrowsTheContext();

private:
    QTemporaryDir m_config;
    QString m_expected; // coli generate's text for kPrompt with the sampling below
};

void TstAppGui::initTestCase() {
    QVERIFY2(QFileInfo::exists(kModel + "/config.json"),
             qPrintable("fixture model missing (run the coli_fixtures setup test): " + kModel));
    QVERIFY2(QFileInfo(QStringLiteral(COLI_CLI_PATH)).isExecutable(),
             "the coli CLI is not built: " COLI_CLI_PATH);
}

static GenerateParams testParams() {
    GenerateParams params;
    params.maxNewTokens = kMaxTokens;
    return params;
}

static SamplingOverrides testSampling() {
    SamplingOverrides s;
    s.temperature = kTemp;
    s.topK = kTopK;
    s.topP = kTopP;
    s.minP = kMinP;
    s.repeatPenalty = 1.0f;
    s.seed = kSeed;
    return s;
}

void TstAppGui::chatAnswerMatchesCli() {
    App app(testParams(), testSampling());
    QVERIFY(app.window);
    app.window->resize(1000, 720);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;

    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QVERIFY2(c.errorText().isEmpty(), qPrintable(c.errorText()));
    QVERIFY(!c.modelInfo().isEmpty());

    // Type the prompt and press Enter, as a user does.
    auto* input = app.find("composerInput");
    QVERIFY(input);
    input->forceActiveFocus();
    QTRY_VERIFY(input->hasActiveFocus());
    for (QChar ch : kPrompt)
        QTest::keyClick(app.window, ch.toLatin1()); // the prompt is ASCII
    QCOMPARE(input->property("text").toString(), kPrompt);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QSignalSpy drained(&c, &EngineController::drained);
    QTest::keyClick(app.window, Qt::Key_Return);
    QVERIFY(c.generating());
    QCOMPARE(input->property("text").toString(), QString()); // sent: the box is cleared
    auto* sendButton = app.find("sendButton");
    QVERIFY(sendButton);
    QCOMPARE(sendButton->property("text").toString(), QStringLiteral("Stop"));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY(!c.generating());
    QCOMPARE(sendButton->property("text").toString(), QStringLiteral("Send"));

    ChatModel& chat = *c.chatModel();
    QCOMPARE(chat.rowCount(), 2);
    QCOMPARE(chat.at(0).text, kPrompt);
    const ChatModel::Message answer = chat.at(1);
    QVERIFY2(answer.error.isEmpty(), qPrintable(answer.error));
    QVERIFY(!answer.streaming);
    QVERIFY(answer.tokens > 0);
    QVERIFY(answer.tokensPerSecond > 0);
    QVERIFY(answer.ttft > 0);
    qInfo("answer: %d tokens, %.1f tok/s, ttft %.3f s", answer.tokens, answer.tokensPerSecond,
          answer.ttft);
    // Pieces arrived in batches: no more drains than pieces (each drain applies all it finds).
    QVERIFY(drained.count() >= 1);

    // The same request through the CLI: identical text (stdout carries only the text).
    QProcess cli;
    cli.start(QStringLiteral(COLI_CLI_PATH),
              {"generate", kModel, "--chat", "-p", kPrompt, "-n", QString::number(kMaxTokens),
               "--temp", QString::number(kTemp), "--top-k", QString::number(kTopK), "--top-p",
               QString::number(kTopP), "--min-p", QString::number(kMinP), "--repeat-penalty", "1",
               "--seed", QString::number(kSeed)});
    QVERIFY(cli.waitForFinished(120000));
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    const QString expected = QString::fromUtf8(cli.readAllStandardOutput());
    QVERIFY2(!expected.isEmpty(), "coli printed no text: pick another seed/prompt");
    QCOMPARE(answer.text, expected);
    m_expected = expected;

    // A second turn re-renders the whole conversation (KV prefix reuse in the session).
    QVERIFY(c.send(QStringLiteral("And their wings?")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
    QCOMPARE(chat.rowCount(), 4);
    QVERIFY2(chat.at(3).error.isEmpty(), qPrintable(chat.at(3).error));

    // Screenshot: not blank, and the answer bubble is not uniform (text was drawn).
    QTest::qWait(200); // let the last frame settle
    const QImage img = app.window->grabWindow();
    QVERIFY(!img.isNull());
    const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
    QVERIFY(QDir().mkpath(dir));
    QVERIFY(img.save(dir + "/chat.png"));
    qInfo("screenshot: %s/chat.png (%dx%d)", qPrintable(dir), img.width(), img.height());
    QVERIFY2(distinctColours(img, img.rect()) > 16, "window grab is (nearly) blank");
    QList<QQuickItem*> bubbles;
    collectItems(app.window->contentItem(), QStringLiteral("answerBubble"), &bubbles);
    QQuickItem* bubble = nullptr;
    for (QQuickItem* item : bubbles)
        if (item->isVisible() && item->height() > 10) bubble = item; // the last answer
    QVERIFY(bubble);
    const QRectF r = bubble->mapRectToScene(QRectF(0, 0, bubble->width(), bubble->height()));
    const qreal dpr = img.devicePixelRatio();
    const QRect px(int(r.x() * dpr), int(r.y() * dpr), int(r.width() * dpr), int(r.height() * dpr));
    QVERIFY2(distinctColours(img, px) > 4, "the answer area is uniform: no text drawn");
}

// Backpressure: a 2-slot ring and a GUI thread that does not drain for a while. The engine thread
// must wait for room, never drop a piece: the answer still equals the CLI's.
void TstAppGui::smallRingLosesNothing() {
    if (m_expected.isEmpty()) QSKIP("needs chatAnswerMatchesCli's CLI text (it failed)");
    App app(testParams(), testSampling(), /*ringCapacity=*/2);
    QVERIFY(app.window);
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(kPrompt));
    QThread::msleep(300); // the GUI thread is busy: the ring fills, the engine waits
    QVERIFY(c.generating());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QCOMPARE(c.chatModel()->at(1).text, m_expected);
    QCOMPARE(c.chatModel()->at(1).tokens, kMaxTokens);
}

// Stop mid-answer: the text so far stays, the answer is marked stopped, the next turn works.
void TstAppGui::stopKeepsTextAndAllowsNextTurn() {
    GenerateParams params;
    params.maxNewTokens = 20000;
    params.ignoreEos = true;
    App app(params);
    QVERIFY(app.window);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(kPrompt));
    QTRY_VERIFY_WITH_TIMEOUT(!c.chatModel()->at(1).text.isEmpty(), 60000);
    auto* sendButton = app.find("sendButton");
    QVERIFY(sendButton);
    QCOMPARE(sendButton->property("text").toString(), QStringLiteral("Stop"));
    QVERIFY(QMetaObject::invokeMethod(sendButton, "clicked")); // as a click does
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    const ChatModel::Message stopped = c.chatModel()->at(1);
    QCOMPARE(stopped.stopReason, QStringLiteral("cancelled"));
    QVERIFY(!stopped.text.isEmpty());
    QVERIFY(stopped.tokens > 0 && stopped.tokens < 20000);
    QVERIFY(stopped.error.isEmpty());
    QVERIFY(!c.generating());
    // A next turn runs (and stops) normally.
    QVERIFY(c.send(QStringLiteral("Go on.")));
    QTRY_VERIFY_WITH_TIMEOUT(!c.chatModel()->at(3).text.isEmpty(), 60000);
    c.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 5000);
    QCOMPARE(c.chatModel()->rowCount(), 4);
    // New chat clears the conversation.
    c.newChat();
    QCOMPARE(c.chatModel()->rowCount(), 0);
}

// Stop while the chat template renders (nested loops that run a second or more until the render's
// operation budget runs out): the render stops within a second, the answer ends as cancelled,
// not as an error.
void TstAppGui::stopInterruptsASlowTemplateRender() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    for (const QString& f : QDir(kShippedModel).entryList(QDir::Files))
        QVERIFY(QFile::copy(kShippedModel + "/" + f, dir.filePath(f)));
    QFile cfgFile(dir.filePath("tokenizer_config.json"));
    QVERIFY(cfgFile.open(QIODevice::ReadOnly));
    QJsonObject cfg = QJsonDocument::fromJson(cfgFile.readAll()).object();
    cfgFile.close();
    cfg["chat_template"] = QStringLiteral(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
        "{{ raise_exception('the slow render finished before Stop') }}");
    QVERIFY(cfgFile.open(QIODevice::WriteOnly | QIODevice::Truncate));
    cfgFile.write(QJsonDocument(cfg).toJson());
    cfgFile.close();

    App app;
    QVERIFY(app.window);
    EngineController& c = *app.controller;
    c.loadModel(dir.path());
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(kPrompt));
    QTest::qWait(150); // rendering
    QCOMPARE(finished.count(), 0);
    QElapsedTimer t;
    t.start();
    c.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    // Cancelled, not ended by the operation budget's error: Stop interrupted the render. The
    // latency is printed, not asserted (it depends on the machine's load).
    qInfo("stop -> answer finished in %lld ms", static_cast<long long>(t.elapsed()));
    const ChatModel::Message stopped = c.chatModel()->at(1);
    QCOMPARE(stopped.stopReason, QStringLiteral("cancelled"));
    QVERIFY2(stopped.error.isEmpty(), qPrintable(stopped.error));
    QVERIFY(c.errorText().isEmpty());
    QVERIFY(!c.generating());
}

void TstAppGui::badModelDirShowsErrorInWindow() {
    App app;
    QVERIFY(app.window);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    const QString bad = m_config.path() + "/no-such-model";
    app.controller->loadModel(bad);
    QTRY_COMPARE_WITH_TIMEOUT(app.controller->loadState(), QStringLiteral("error"), 30000);
    QVERIFY(app.controller->errorText().contains(bad));
    // Shown in the window: the banner is visible and its text names the folder.
    auto* banner = app.find("errorBanner");
    QVERIFY(banner);
    QTRY_VERIFY(banner->isVisible());
    auto* text = app.find("errorText");
    QVERIFY(text);
    QVERIFY(text->property("text").toString().contains(bad));
    QTest::qWait(100);
    const QImage img = app.window->grabWindow();
    QVERIFY(QDir().mkpath(QStringLiteral(COLI_BINARY_DIR "/screenshots")));
    QVERIFY(img.save(QStringLiteral(COLI_BINARY_DIR "/screenshots/error.png")));
    // Sending is refused while no model is ready.
    QVERIFY(!app.controller->send(QStringLiteral("hello")));
    QCOMPARE(app.controller->chatModel()->rowCount(), 0);
}

void TstAppGui::quitMidAnswerIsPrompt() {
    GenerateParams params;
    params.maxNewTokens = 20000; // far more than fits in the test's time: must be cut short
    params.ignoreEos = true;
    App app(params);
    QVERIFY(app.window);
    app.window->show();
    EngineController& c = *app.controller;
    c.loadModel(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QVERIFY(c.send(kPrompt));
    // Wait until text streams, then quit the way main() does on aboutToQuit.
    QTRY_VERIFY_WITH_TIMEOUT(!c.chatModel()->at(1).text.isEmpty(), 60000);
    QVERIFY(c.generating());
    // The real quit path: main() connects aboutToQuit to shutdown(); quit the event loop as
    // Ctrl+Q / closing the window does, and time it until exec() has returned.
    QObject::connect(qApp, &QCoreApplication::aboutToQuit, &c, &EngineController::shutdown);
    QElapsedTimer t;
    QTimer::singleShot(0, qApp, [&] {
        QVERIFY(c.generating()); // still answering when quit is requested
        t.start();
        QCoreApplication::quit();
    });
    QCoreApplication::exec();
    const qint64 ms = t.elapsed();
    qInfo("quit mid-answer took %lld ms (answer had %d characters)", static_cast<long long>(ms),
          int(c.chatModel()->at(1).text.size()));
    QVERIFY2(ms < 3000, qPrintable(QString("quit took %1 ms").arg(ms)));
    QVERIFY(!c.generating());
}

int main(int argc, char** argv) {
    // Keep the user's settings out of it: QSettings and friends write under a temporary folder.
    QTemporaryDir home;
    qputenv("XDG_CONFIG_HOME", home.path().toLocal8Bit());
    QApplication app(argc, argv); // as the real app (Charts need Widgets)
    TstAppGui t;
    return QTest::qExec(&t, argc, argv);
}
// The model the app opens by default (resources/models/, issue 3): a chat request through the
// window gives the same answer as `coli generate --chat`, ends by itself (the model learnt the
// chat format's <|im_end|>), and is drawn. Screenshot: screenshots/shipped-model.png.
void TstAppGui::shippedDefaultModelChats() {
    QVERIFY2(QFileInfo::exists(kShippedModel + "/config.json"), qPrintable(kShippedModel));
    App app(testParams(), testSampling());
    app.window->resize(1000, 720);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kShippedModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QVERIFY2(c.errorText().isEmpty(), qPrintable(c.errorText()));
    QSignalSpy finished(&c, &EngineController::answerFinished);
    const QString request = QStringLiteral("Tell me a fortune.");
    QVERIFY(c.send(request));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    ChatModel& chat = *c.chatModel();
    QCOMPARE(chat.rowCount(), 2);
    const ChatModel::Message answer = chat.at(1);
    QVERIFY2(answer.error.isEmpty(), qPrintable(answer.error));
    QVERIFY(answer.tokens > 0);
    QVERIFY2(!answer.text.trimmed().isEmpty(), "empty answer");
    qInfo("shipped model answer (%d tokens): %s", answer.tokens, qPrintable(answer.text));

    QProcess cli;
    cli.start(QStringLiteral(COLI_CLI_PATH),
              {"generate", kShippedModel, "--chat", "-p", request, "-n",
               QString::number(kMaxTokens), "--temp", QString::number(kTemp), "--top-k",
               QString::number(kTopK), "--top-p", QString::number(kTopP), "--min-p",
               QString::number(kMinP), "--repeat-penalty", "1", "--seed", QString::number(kSeed)});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    QCOMPARE(answer.text, QString::fromUtf8(cli.readAllStandardOutput()));

    QTest::qWait(200);
    const QImage img = app.window->grabWindow();
    const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
    QVERIFY(QDir().mkpath(dir));
    QVERIFY(img.save(dir + "/shipped-model.png"));
    QVERIFY2(distinctColours(img, img.rect()) > 16, "window grab is (nearly) blank");
}

// A chat longer than the default model's 512-token context goes on: older exchanges are left out
// of the prompt (runtime/context_fit.h) and the window says so; no turn fails.
void TstAppGui::longChatOutgrowsTheContext() {
    App app(testParams(), testSampling());
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kShippedModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 120000);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QString request;
    for (int i = 0; i < 12; ++i)
        request += QStringLiteral("Tell me about the sea, the wind and the stars. ");
    bool noticed = false;
    for (int turn = 0; turn < 14 && !noticed; ++turn) {
        QVERIFY(c.send(request + QString::number(turn)));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), turn + 1, 120000);
        const ChatModel::Message answer = c.chatModel()->at(c.chatModel()->rowCount() - 1);
        QVERIFY2(answer.error.isEmpty(), qPrintable(answer.error));
        noticed = c.errorText().contains(QStringLiteral("left out of the prompt"));
    }
    QVERIFY2(noticed, "no notice after 14 long turns: the context was never outgrown?");
    qInfo("notice: %s", qPrintable(c.errorText()));
}

#include "tst_app_gui.moc"
