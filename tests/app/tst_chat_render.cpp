// Answers rendered as Markdown blocks in the real window (under Xvfb; the CTest command starts
// xvfb-run):
//   - the recorded 2,000-token Markdown answer (tests/app/data, made by tools/replay/) replayed
//     with its real timing through EngineWorker -> ring -> EngineController -> ChatModel -> QML:
//     seven code delegates in the monospace font with their languages, a collapsed think block,
//     frames rendered all along the stream; Copy puts the code on the clipboard;
//   - safe rendering: images (Markdown and <img>, remote and local) are never fetched (a local
//     HTTP server gets no connection, inotify sees no open() of a local PNG), raw HTML is shown
//     as text, links open only on a click (and only http/https/mailto ones).
// The GUI thread's longest stall (a 1 ms timer probe) is printed, not asserted: bench_gui_stall
// measures it (docs/performance.md).
#include "app_window.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "stall_probe.h"
#include "token_replay.h"

#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QDir>
#include <QElapsedTimer>
#include <QFontInfo>
#include <QImage>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kRecording = QStringLiteral(COLI_SOURCE_DIR "/tests/app/data/markdown_answer.replay");
const QString kShippedModel = QStringLiteral(COLI_SHIPPED_MODEL_DIR);

struct App {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    explicit App(const WorkerOptions& wo) {
        controller = std::make_unique<EngineController>(wo);
        GenerateParams params;
        params.maxNewTokens = 100000;
        controller->setGenerateParams(params, {});
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
};

QList<QQuickItem*> items(QQuickWindow* w, const char* name) {
    QList<QQuickItem*> out;
    collectItems(w->contentItem(), QString::fromLatin1(name), &out);
    return out;
}

QQuickItem* childNamed(QQuickItem* root, const char* name) {
    QList<QQuickItem*> out;
    collectItems(root, QString::fromLatin1(name), &out);
    return out.isEmpty() ? nullptr : out.first();
}

QString plainText(QQuickItem* textEdit) {
    QString s;
    const int n = textEdit->property("length").toInt();
    QMetaObject::invokeMethod(textEdit, "getText", Q_RETURN_ARG(QString, s), Q_ARG(int, 0),
                              Q_ARG(int, n));
    return s;
}

void saveScreenshot(QQuickWindow* w, const QString& name) {
    QTest::qWait(150);
    const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
    QDir().mkpath(dir);
    w->grabWindow().save(dir + "/" + name);
    qInfo("screenshot: %s/%s", qPrintable(dir), qPrintable(name));
}

QPoint centreOf(QQuickItem* item) {
    return item->mapToScene(QPointF(item->width() / 2, item->height() / 2)).toPoint();
}

// Scrolls the chat so that `item` is at the top of the view.
void scrollTo(QQuickWindow*, QQuickItem* item) {
    QQuickItem* list = nullptr;
    for (QQuickItem* p = item->parentItem(); p && !list; p = p->parentItem())
        if (p->inherits("QQuickListView")) list = p;
    if (!list) return;
    QQuickItem* content = list->property("contentItem").value<QQuickItem*>();
    const QPointF inContent = item->mapToItem(content, QPointF(0, 0));
    list->setProperty("following", false);
    list->setProperty("contentY", inContent.y() - 8);
}

// Receives what Qt.openUrlExternally would hand to the desktop (QDesktopServices URL handler).
class UrlSink : public QObject {
    Q_OBJECT
public:
    QList<QUrl> opened;
public slots:
    void openUrl(const QUrl& url) { opened << url; }
};
} // namespace

class TstChatRender : public QObject {
    Q_OBJECT
private slots:
    void init() { g_warnings.clear(); }
    void replayedMarkdownAnswerRendersBlocks();
    void answersRenderSafely();
    void oneFlushPerRenderedFrame();
};

void TstChatRender::replayedMarkdownAnswerRendersBlocks() {
    auto rec = readTokenReplay(kRecording.toStdString());
    QVERIFY2(rec.isOk(), rec.status().message().c_str());
    QString expected;
    for (const ReplayPiece& p : rec.value())
        expected += QString::fromStdString(p.text);

    WorkerOptions wo;
    wo.threads = 1;
    wo.replayFile = kRecording.toStdString();
    wo.replaySpeed = 1; // the recorded timing
    App app(wo);
    QVERIFY(app.window);
    app.window->resize(1000, 760);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kShippedModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 30000);

    int frames = 0;
    connect(app.window, &QQuickWindow::frameSwapped, this, [&] { ++frames; });
    StallProbe probe;
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QSignalSpy flushed(&c, &EngineController::piecesFlushed);
    probe.start();
    QVERIFY(c.send(QStringLiteral("How do I summarise a CSV file of bird sightings?")));
    QTRY_VERIFY_WITH_TIMEOUT(flushed.count() > 0, 30000);
    const int framesAtFirstPiece = frames;
    // Half way: the think block has closed and some code blocks are there already.
    QTRY_VERIFY_WITH_TIMEOUT(c.chatModel()->at(1).text.size() > expected.size() / 2, 60000);
    const int framesHalfWay = frames;
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    probe.stop();
    qInfo("replay: %d pieces in %.1f s, %d ticks, %d frames; GUI thread's longest stall %.1f ms "
          "(99th percentile %.1f ms, %d gaps over 50 ms)",
          int(rec.value().size()), probe.durationSeconds(), int(flushed.count()), frames,
          probe.longestMs(), probe.quantileMs(0.99), probe.gapsOver(50));

    const ChatModel::Message answer = c.chatModel()->at(1);
    QVERIFY2(answer.error.isEmpty(), qPrintable(answer.error));
    QCOMPARE(answer.text, expected);
    // Never stalled for good: frames kept being rendered while the answer streamed (the scene
    // changed with every tick), in both halves of the stream.
    QVERIFY2(framesHalfWay - framesAtFirstPiece >= 10,
             qPrintable(QString::number(framesHalfWay - framesAtFirstPiece)));
    QVERIFY2(frames - framesHalfWay >= 10, qPrintable(QString::number(frames - framesHalfWay)));

    // Seven code delegates, in the monospace font, with their languages.
    QTest::qWait(100);
    const QList<QQuickItem*> codes = items(app.window, "codeBlock");
    QCOMPARE(codes.size(), 7);
    QStringList languages;
    for (QQuickItem* code : codes) {
        QQuickItem* text = childNamed(code, "codeText");
        QVERIFY(text);
        const QFont font = text->property("font").value<QFont>();
        QCOMPARE(font.family(), QStringLiteral("DejaVu Sans Mono"));
        QVERIFY2(QFontInfo(font).fixedPitch(), qPrintable(QFontInfo(font).family()));
        languages << childNamed(code, "codeLanguage")->property("text").toString();
    }
    QCOMPARE(languages, (QStringList{"csv", "python", "bash", "text", "python", "cpp", "sh"}));
    QVERIFY(plainText(childNamed(codes[1], "codeText")).startsWith("import csv\nimport sys\n"));
    // Prose blocks: a heading, a table, the image as its alt text; no Markdown syntax left.
    const QList<QQuickItem*> prose = items(app.window, "proseBlock");
    QVERIFY(prose.size() >= 15);
    QString allProse;
    for (QQuickItem* p : prose)
        allProse += plainText(p) + "\n";
    QVERIFY(allProse.contains("Summarising bird sightings from a CSV file"));
    QVERIFY(allProse.contains("Sightings per hour"));
    QVERIFY(!allProse.contains("![") && !allProse.contains("**") && !allProse.contains("|:--"));

    // The reasoning: collapsed once the answer began, "Thought for N s"; a click opens it.
    const QList<QQuickItem*> thinks = items(app.window, "thinkBlock");
    QCOMPARE(thinks.size(), 1);
    QVERIFY(!thinks[0]->property("expanded").toBool());
    QQuickItem* toggle = childNamed(thinks[0], "thinkToggle");
    QVERIFY(toggle);
    auto* toggleLabel = toggle->property("contentItem").value<QQuickItem*>();
    QVERIFY(toggleLabel);
    const QString label = toggleLabel->property("text").toString();
    QVERIFY2(label.startsWith(QStringLiteral("\u25B8 Thought for ")) && label.endsWith(" s"),
             qPrintable(label));
    QVERIFY(thinks[0]->property("seconds").toDouble() >= 0);
    QVERIFY(!childNamed(thinks[0], "thinkText")->isVisible());
    scrollTo(app.window, thinks[0]);
    QTest::qWait(200);
    saveScreenshot(app.window, "markdown-answer-top.png");
    QTest::mouseClick(app.window, Qt::LeftButton, {}, centreOf(toggle));
    QTRY_VERIFY(thinks[0]->property("expanded").toBool());
    QTRY_VERIFY(childNamed(thinks[0], "thinkText")->isVisible());
    QVERIFY(plainText(childNamed(thinks[0], "thinkText")).startsWith("The user wants"));
    saveScreenshot(app.window, "markdown-think-open.png");

    // Copy: the code of that block on the clipboard.
    QGuiApplication::clipboard()->clear();
    QQuickItem* copy = childNamed(codes[0], "copyCodeButton");
    QVERIFY(copy);
    scrollTo(app.window, codes[0]);
    QTest::qWait(200);
    QTest::mouseClick(app.window, Qt::LeftButton, {}, centreOf(copy));
    QTRY_VERIFY(QGuiApplication::clipboard()->text().startsWith("timestamp,species,count"));
    QString firstCode; // the code of the first code row of the answer's blocks
    const MessageBlocks* blocks = c.chatModel()->at(1).blocks;
    for (int r = 0; r < blocks->rowCount() && firstCode.isEmpty(); ++r)
        if (blocks->data(blocks->index(r), MessageBlocks::KindRole).toString() == "code")
            firstCode = blocks->data(blocks->index(r), MessageBlocks::TextRole).toString();
    QCOMPARE(QGuiApplication::clipboard()->text(), firstCode);
    QVERIFY(firstCode.endsWith(QStringLiteral("Rufous hummingbird,1,chloé")));
    QCOMPARE(copy->property("text").toString(), QStringLiteral("Copied"));
    saveScreenshot(app.window, "markdown-code.png");
    scrollTo(app.window, codes[5]);
    QTest::qWait(200);
    saveScreenshot(app.window, "markdown-code-cpp.png");
    // The same in the dark theme.
    auto* settings = app.window->property("appSettings").value<QObject*>();
    QVERIFY(settings);
    settings->setProperty("theme", QStringLiteral("dark"));
    QTest::qWait(200);
    saveScreenshot(app.window, "markdown-code-cpp-dark.png");
    scrollTo(app.window, thinks[0]);
    QTest::qWait(200);
    saveScreenshot(app.window, "markdown-answer-top-dark.png");
    for (QQuickItem* p : prose)
        if (plainText(p).contains(QStringLiteral("Lines of code"))) {
            scrollTo(app.window, p);
            QTest::qWait(200);
            saveScreenshot(app.window, "markdown-table-dark.png");
        }
    scrollTo(app.window, thinks[0]);
    QTest::qWait(200);
    const QImage dark = app.window->grabWindow();
    const QRectF code =
        codes[0]->mapRectToScene(QRectF(0, 0, codes[0]->width(), codes[0]->height()));
    QVERIFY2(dark.pixelColor(code.center().toPoint() + QPoint(int(code.width() / 2) - 4, 0))
                     .lightnessF() < 0.3,
             "the code block is not dark in the dark theme");
    QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
}

void TstChatRender::answersRenderSafely() {
    QTcpServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost, 0));
    QSignalSpy connections(&server, &QTcpServer::newConnection);
    const QString base = QStringLiteral("http://127.0.0.1:%1").arg(server.serverPort());
    // A local image (a real PNG), watched with inotify: any open() of it is an event.
    QTemporaryDir dir;
    const QString localImage = dir.path() + "/local.png";
    QImage png(8, 8, QImage::Format_RGB32);
    png.fill(Qt::red);
    QVERIFY(png.save(localImage));
    const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    QVERIFY(watch >= 0);
    QVERIFY(::inotify_add_watch(watch, localImage.toLocal8Bit().constData(), IN_OPEN | IN_ACCESS) >=
            0);
    UrlSink sink;
    QDesktopServices::setUrlHandler(QStringLiteral("http"), &sink, "openUrl");
    QDesktopServices::setUrlHandler(QStringLiteral("file"), &sink, "openUrl");

    const QString answer =
        QStringLiteral("Say <b>x</b> and <i>y</i> here; <img src=\"%1/inline.png\"> inline.\n\n"
                       "![remote image](%1/markdown.png)\n\n"
                       "<img src=\"%1/block.png\">\n\n"
                       "![local image](file://%2) <img src=\"file://%2\">\n\n"
                       "<script>alert(1)</script>\n\n"
                       "Open [the page](%1/page) or [this](javascript:alert(1)).\n")
            .arg(base, localImage);
    WorkerOptions wo;
    wo.threads = 1;
    App app(wo);
    QVERIFY(app.window);
    app.window->resize(1000, 700);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    ChatModel& chat = *app.controller->chatModel();
    chat.appendMessage(QStringLiteral("user"), QStringLiteral("Show me an image."));
    chat.appendMessage(QStringLiteral("assistant"), answer);
    QTest::qWait(1000); // render, and leave time for any fetch to reach the server

    const QList<QQuickItem*> prose = items(app.window, "proseBlock");
    QCOMPARE(prose.size(), 6);
    QString shown;
    for (QQuickItem* p : prose)
        shown += plainText(p) + "\n";
    qInfo("shown: %s", qPrintable(shown));
    // Raw HTML as text.
    QVERIFY(shown.contains("Say <b>x</b> and <i>y</i> here"));
    QVERIFY(shown.contains("<img src=\"" + base + "/block.png\">"));
    QVERIFY(shown.contains("<script>alert(1)</script>"));
    // Images as their alt text.
    QVERIFY(shown.contains("remote image"));
    QVERIFY(shown.contains("local image"));
    // Nothing fetched: no connection to the server, nobody opened the FIFO.
    QCoreApplication::processEvents();
    QCOMPARE(connections.count(), 0);
    QVERIFY(!server.hasPendingConnections());
    char events[4096];
    const ssize_t got = ::read(watch, events, sizeof events);
    const int err = errno;
    ::close(watch);
    QVERIFY2(got < 0 && err == EAGAIN, "the local image was opened");
    // No link opened by itself.
    QVERIFY(sink.opened.isEmpty());
    saveScreenshot(app.window, "markdown-safe.png");
    auto* settings = app.window->property("appSettings").value<QObject*>();
    QVERIFY(settings);
    settings->setProperty("theme", QStringLiteral("dark"));
    saveScreenshot(app.window, "markdown-safe-dark.png");
    settings->setProperty("theme", QStringLiteral("light"));
    QTest::qWait(100);

    // Links open on a click, and only web links are links (javascript: is plain text).
    QSet<QString> links;
    QPoint pageAt;
    QQuickItem* linkItem = nullptr;
    for (QQuickItem* p : prose)
        for (int y = 2; y < p->height(); y += 4)
            for (int x = 2; x < p->width(); x += 4) {
                QString link;
                QMetaObject::invokeMethod(p, "linkAt", Q_RETURN_ARG(QString, link), Q_ARG(qreal, x),
                                          Q_ARG(qreal, y));
                if (link.isEmpty()) continue;
                links.insert(link);
                if (link.endsWith("/page") && !linkItem) {
                    linkItem = p;
                    pageAt = p->mapToScene(QPointF(x, y)).toPoint();
                }
            }
    qInfo("links: %s", qPrintable(QStringList(links.begin(), links.end()).join(' ')));
    for (const QString& l : links)
        QVERIFY2(l.startsWith(base), qPrintable(l)); // images link to their URL, never javascript:
    QVERIFY(linkItem);
    QTest::mouseClick(app.window, Qt::LeftButton, {}, pageAt);
    QTRY_COMPARE(sink.opened.size(), 1);
    QCOMPARE(sink.opened.first(), QUrl(base + "/page"));
    QCOMPARE(connections.count(), 0); // the click went to the desktop's handler, not to Qt
    QDesktopServices::unsetUrlHandler(QStringLiteral("http"));
    QDesktopServices::unsetUrlHandler(QStringLiteral("file"));
    QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
}

// With a slow renderer (each frame takes 60 ms more on the render thread), token pieces still go
// to the chat at most once per frame: between two flushes the window put a frame on screen,
// unless the wait limit passed. Without the frame gate, the 16 ms ticks would flush three times
// per frame and make the GUI thread wait for the render thread at every sync.
void TstChatRender::oneFlushPerRenderedFrame() {
    WorkerOptions wo;
    wo.threads = 1;
    wo.replayFile = kRecording.toStdString();
    wo.replaySpeed = 1;
    App app(wo);
    QVERIFY(app.window);
    app.window->resize(1000, 700);
    app.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(app.window));
    EngineController& c = *app.controller;
    c.loadModel(kShippedModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 30000);
    connect(
        app.window, &QQuickWindow::beforeRendering, this, [] { QThread::msleep(60); },
        Qt::DirectConnection); // on the render thread
    QString order; // 'F' a flush, 'S' a frame on screen (in the order the GUI thread saw them)
    QElapsedTimer clock;
    clock.start();
    std::vector<qint64> flushAt;
    bool stopped = false; // the flush at the end of an answer comes at once: not counted
    connect(
        app.window, &QQuickWindow::frameSwapped, this,
        [&] {
            if (!stopped) order += 'S';
        },
        Qt::QueuedConnection);
    connect(&c, &EngineController::piecesFlushed, this, [&] {
        if (stopped) return;
        order += 'F';
        flushAt.push_back(clock.elapsed());
    });
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(QStringLiteral("Summarise my CSV file.")));
    QTRY_VERIFY_WITH_TIMEOUT(flushAt.size() >= 20, 30000);
    stopped = true;
    c.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    // Two flushes in a row with no frame between them only when the wait limit had passed (a
    // lower bound on time: a slow machine cannot make this fail).
    int f = -1, gated = 0;
    for (int i = 0; i < order.size(); ++i) {
        if (order[i] != 'F') continue;
        ++f;
        if (i > 0 && order[i - 1] == 'F') {
            QVERIFY2(flushAt[size_t(f)] - flushAt[size_t(f - 1)] >=
                         EngineController::kFrameWaitLimitMs,
                     qPrintable(QStringLiteral("flush %1 without a frame since the last, %2 ms "
                                               "after it: %3")
                                    .arg(f)
                                    .arg(flushAt[size_t(f)] - flushAt[size_t(f - 1)])
                                    .arg(order)));
        } else if (i > 0) {
            ++gated;
        }
    }
    qInfo("%d flushes, order %s", int(flushAt.size()), qPrintable(order.left(80)));
    QVERIFY(gated >= 10);
}

int main(int argc, char** argv) {
    QTemporaryDir home;
    qputenv("XDG_CONFIG_HOME", home.path().toLocal8Bit());
    QApplication app(argc, argv); // as the real app
    g_previous = qInstallMessageHandler(recordWarnings);
    TstChatRender t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_chat_render.moc"
