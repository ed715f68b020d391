// A whole session in the real window under Xvfb (the CTest command starts xvfb-run), driven with
// real input (mouse clicks on the controls found by objectName, typed keys, the shortcuts):
// the window is built as main() builds it (AppSettings under a temporary XDG_CONFIG_HOME, the
// database in a temporary folder, EngineController + SessionManager + TurnStatsModel) on the
// shipped default model. One flow, one stage per test function, sharing the app:
// send and stream, Stop (the text stays, marked stopped), Continue (the same row grows),
// Regenerate (the row is replaced), New chat and a second chat, edit and resend (what followed is
// replaced), rename through the ⋯ menu and its dialog, search (the list narrows, with a snippet),
// export as Markdown and JSON through the menu and the file dialog, every view by its shortcut,
// the RAM budget typed in the Tiers view during an answer (the engine's tier status one token
// later: the allocation within it), screenshots of every view in the light and dark themes
// (screenshots/session-<view>-<theme>.png, with pixel checks of the Tiers bars and the charts),
// then quit and a restart on the same database: the list and the last chat come back, with its KV
// cache on disk (its size shown, the next answer typed reuses stored tokens).
#include "app_options.h"
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "session_manager.h"
#include "turn_stats_model.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QQmlApplicationEngine>
#include <QQmlProperty>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_SHIPPED_MODEL_DIR);
const QString kShots = QStringLiteral(COLI_BINARY_DIR "/screenshots");
constexpr int kShortAnswer = 24; // tokens: quick turns
constexpr int kLongAnswer = 400; // tokens: long enough to act while it streams

// The app as main() makes it (app/main.cpp), on one database and settings folder. The answers
// ignore the end-of-sequence token so that their length is the Settings view's "most new
// tokens": the shipped model's answers are otherwise often too short to act on while they stream.
struct App {
    std::unique_ptr<AppSettings> settings;
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<SessionManager> sessions;
    std::unique_ptr<TurnStatsModel> turnStats;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    explicit App(const QString& database) {
        settings = std::make_unique<AppSettings>(kModel);
        if (settings->usageDatabase().isEmpty()) settings->setUsageDatabase(database);
        QString notice;
        const QString modelDir = settings->startupModelDir(&notice);
        const AppOptions opt = parseAppOptions({QStringLiteral("colibri")});
        WorkerOptions wo;
        wo.threads = defaultEngineThreads();
        controller = std::make_unique<EngineController>(wo);
        connectSettings(settings.get(), controller.get(), 0);
        GenerateParams p = mergedParams(opt, *settings);
        p.ignoreEos = true;
        controller->setGenerateParams(p, mergedSampling(opt, *settings));
        StorageWorkerOptions so;
        so.path = settings->effectiveUsageDatabase().toStdString();
        sessions = std::make_unique<SessionManager>(controller.get(), so);
        turnStats = std::make_unique<TurnStatsModel>(sessions.get(), controller.get());
        engine = std::make_unique<QQmlApplicationEngine>();
        QString error;
        window = createMainWindow(*engine, controller.get(), {QStringLiteral(COLI_QML_IMPORT_DIR)},
                                  &error, settings.get(), sessions.get(), turnStats.get());
        if (!window) qWarning("%s", qPrintable(error));
        if (!modelDir.isEmpty()) controller->loadModel(modelDir);
        if (!notice.isEmpty()) controller->showNotice(notice);
    }
    // What main() does at aboutToQuit, then the QML engine and the rest go (in main()'s order).
    ~App() {
        controller->shutdown();
        sessions->shutdown();
        engine.reset();
        turnStats.reset();
        sessions.reset();
        controller.reset();
    }
    bool ready() {
        return QTest::qWaitFor([&] { return controller->loadState() != "loading"; }, 60000) &&
               controller->loadState() == "ready";
    }
    ChatModel& chat() { return *controller->chatModel(); }
    SessionListModel& list() { return *sessions->sessions(); }
    // The storage thread has run everything posted so far.
    bool settle() {
        return QTest::qWaitFor([&] { return sessions->worker()->pending() == 0; }, 10000);
    }
    QString currentView() const {
        QObject* stack = window->findChild<QObject*>(QStringLiteral("viewStack"));
        return stack ? stack->property("currentName").toString() : QString();
    }
};

// The visible items named `name`, in item-tree order.
QList<QQuickItem*> visibleItems(QQuickWindow* w, const QString& name) {
    QList<QQuickItem*> all, shown;
    collectItems(w->contentItem(), name, &all);
    for (QQuickItem* i : all)
        if (i->isVisible() && i->width() > 0 && i->height() > 0) shown << i;
    return shown;
}
QQuickItem* visibleItem(QQuickWindow* w, const QString& name) {
    const QList<QQuickItem*> items = visibleItems(w, name);
    return items.isEmpty() ? nullptr : items.first();
}
// A visible item of class `type` under `root` whose text is `text`: a button
// ("QQuickAbstractButton", any kind) or a text ("QQuickText": popups' contents have no objectName).
QQuickItem* itemWithText(QQuickItem* root, const char* type, const QString& text) {
    for (QQuickItem* child : root->childItems()) {
        if (child->isVisible() && child->inherits(type) &&
            child->property("text").toString() == text)
            return child;
        if (QQuickItem* found = itemWithText(child, type, text)) return found;
    }
    return nullptr;
}

QPoint centre(QQuickItem* item) {
    return item->mapToScene(QPointF(item->width() / 2, item->height() / 2)).toPoint();
}
void click(QQuickWindow* w, QQuickItem* item) {
    QTest::mouseMove(w, centre(item)); // hover first, as a pointer does
    QTest::mouseClick(w, Qt::LeftButton, {}, centre(item));
}
// Types ASCII `text` into the item that has the focus, key by key (QTest::keyClicks takes
// widgets only).
void typeText(QQuickWindow* w, const QString& text) {
    for (const QChar ch : text)
        QTest::keyClick(w, ch.toLatin1());
}
// Replaces the text of the field that has the focus, as a user does (select all, type).
void retype(QQuickWindow* w, const QString& text) {
    QTest::keyClick(w, Qt::Key_A, Qt::ControlModifier);
    typeText(w, text);
}

// The message bubble's item (MessageBubble) of ChatModel row `row` on screen.
QQuickItem* bubbleOf(QQuickWindow* w, int row) {
    QList<QQuickItem*> all;
    collectItems(w->contentItem(), QStringLiteral("messageActions"), &all);
    for (QQuickItem* actions : all) {
        QQuickItem* bubble = actions->parentItem() ? actions->parentItem()->parentItem() : nullptr;
        if (bubble && bubble->property("index").toInt() == row && bubble->isVisible())
            return bubble;
    }
    return nullptr;
}
// The action button `name` (copyMessage, editMessage, regenerateAnswer, continueAnswer) under
// the message at `row`, shown by hovering the message.
QQuickItem* messageAction(QQuickWindow* w, int row, const QString& name) {
    QQuickItem* bubble = bubbleOf(w, row);
    if (!bubble) return nullptr;
    QTest::mouseMove(w, centre(bubble));
    QQuickItem* found = nullptr;
    (void)QTest::qWaitFor([&] {
        QList<QQuickItem*> items;
        collectItems(bubble, name, &items);
        for (QQuickItem* i : items)
            if (i->isVisible() && i->isEnabled()) found = i;
        return found != nullptr;
    });
    return found;
}

// The saved chat's row (SessionRow) in the list, by the title its first label shows.
QQuickItem* sessionRow(QQuickWindow* w, const QString& title) {
    for (QQuickItem* row : visibleItems(w, QStringLiteral("sessionRow"))) {
        QList<QQuickItem*> labels;
        collectItems(row, QString(), &labels);
        for (QQuickItem* l : labels)
            if (l->inherits("QQuickText") && l->property("text").toString() == title) return row;
    }
    return nullptr;
}

// Distinct colours and saturated pixels in a rectangle of the window's image (scene
// coordinates): a bar or chart that drew is neither uniform nor colourless.
struct Pixels {
    int colours = 0;
    int saturated = 0;
};
Pixels pixelsIn(const QImage& img, const QRectF& scene, qreal dpr) {
    QSet<QRgb> colours;
    Pixels p;
    for (int y = int(scene.top()) + 1; y < int(scene.bottom()) - 1; y += 2)
        for (int x = int(scene.left()) + 1; x < int(scene.right()) - 1; x += 2) {
            const QColor c = img.pixelColor(int(x * dpr), int(y * dpr));
            colours.insert(c.rgb());
            if (c.hsvSaturation() > 90 && c.value() > 60) ++p.saturated;
        }
    p.colours = int(colours.size());
    return p;
}

// A Tiers view bar (TierBar) drew its segments: along its middle, the share of pixels off the
// track's colour is the share its segments claim (the RAM bar's "free" part is the track).
// Returns "" or what is wrong.
QString barDrew(const QImage& img, QQuickItem* bar, qreal dpr) {
    double claimed = 0;
    for (const QVariant& v : bar->property("segments").toList()) {
        const QVariantMap seg = v.toMap();
        if (seg.value("name").toString() != QLatin1String("free"))
            claimed += std::clamp(seg.value("share").toDouble(), 0.0, 1.0);
    }
    const QColor track = bar->property("color").value<QColor>();
    const QPointF left = bar->mapToScene(QPointF(0, bar->height() / 2));
    int drawn = 0, total = 0;
    for (int x = 3; x < int(bar->width()) - 3; ++x, ++total) {
        const QColor c = img.pixelColor(int((left.x() + x) * dpr), int(left.y() * dpr));
        if (std::abs(c.red() - track.red()) + std::abs(c.green() - track.green()) +
                std::abs(c.blue() - track.blue()) >
            30)
            ++drawn;
    }
    const double share = total > 0 ? double(drawn) / total : 0;
    if (std::abs(share - std::min(1.0, claimed)) > 0.05)
        return QStringLiteral("%1: segments claim %2 of the bar, %3 drawn")
            .arg(bar->objectName())
            .arg(claimed, 0, 'f', 2)
            .arg(share, 0, 'f', 2);
    return {};
}

// Each chart of the Charts view scrolled into view: its plot area holds pixels of series colour.
// Returns "" or what did not draw.
QString chartsDrew(QQuickWindow* w) {
    QQuickItem* scroll = visibleItem(w, QStringLiteral("chartsScroll"));
    auto* flick = scroll ? qvariant_cast<QQuickItem*>(scroll->property("contentItem")) : nullptr;
    if (!flick) return QStringLiteral("no scrolling charts area");
    QString failed;
    for (const char* name :
         {"rateChart", "liveChart", "ttftChart", "hitChart", "mibChart", "splitChart"}) {
        QQuickItem* chart = visibleItem(w, QString::fromLatin1(name));
        if (!chart) return QStringLiteral("%1: not shown").arg(name);
        auto* content = flick->property("contentItem").value<QQuickItem*>();
        const qreal top = chart->mapToItem(content, QPointF(0, 0)).y();
        const qreal room = flick->property("contentHeight").toReal() - flick->height();
        flick->setProperty("contentY", std::clamp(top - 40, 0.0, std::max(0.0, room)));
        QTest::qWait(60);
        const QImage img = w->grabWindow();
        const QRectF plot = QQmlProperty::read(chart, QStringLiteral("plotArea")).toRectF();
        const QRectF area(chart->mapToScene(plot.topLeft()), plot.size());
        const Pixels p = pixelsIn(img, area, w->devicePixelRatio());
        if (p.saturated < 15 || p.colours < 3)
            failed += QStringLiteral("%1: %2 series pixels, %3 colours; ")
                          .arg(name)
                          .arg(p.saturated)
                          .arg(p.colours);
    }
    flick->setProperty("contentY", 0);
    QTest::qWait(60);
    return failed;
}
} // namespace

class TestAppSession : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir; // the database and the exports
    std::unique_ptr<App> m_app;
    QQuickWindow* w() const { return m_app->window; }
    App& app() { return *m_app; }

    // Types `text` into the composer and presses Enter; true once its answer started.
    // Empty when the message was sent (its row and the answer's row appeared), else why not.
    // Waits are generous: on a loaded 2-core machine focus and the engine's reply can take
    // seconds (a failure here once cascaded into three).
    QString sendByKeyboard(const QString& text) {
        QQuickItem* input = visibleItem(w(), QStringLiteral("composerInput"));
        if (!input) return QStringLiteral("no visible composerInput");
        click(w(), input);
        if (!QTest::qWaitFor([&] { return input->hasActiveFocus(); }, 10000))
            return QStringLiteral("the composer did not take the focus");
        const int rows = app().chat().rowCount();
        typeText(w(), text);
        QTest::keyClick(w(), Qt::Key_Return);
        if (!QTest::qWaitFor([&] { return app().chat().rowCount() == rows + 2; }, 10000))
            return QStringLiteral("after Return the chat has %1 rows, expected %2 (typed: '%3')")
                .arg(app().chat().rowCount())
                .arg(rows + 2)
                .arg(input->property("text").toString());
        return {};
    }
    bool waitAnswerEnd(int ms = 60000) {
        return QTest::qWaitFor([&] { return !app().controller->generating(); }, ms);
    }
    void setAnswerLength(int tokens) { app().settings->setMaxNewTokens(tokens); }
    void shortcut(Qt::Key key) { QTest::keyClick(w(), key, Qt::ControlModifier); }

    // Opens the ⋯ menu of the chat titled `title` and triggers its item `item` by a click.
    bool sessionMenu(const QString& title, const QString& item) {
        QQuickItem* entry = openSessionMenu(title, item);
        if (!entry) return false;
        click(w(), entry);
        return true;
    }
    // Opens the ⋯ menu of the chat titled `title`; its item `item` once the menu is in place.
    QQuickItem* openSessionMenu(const QString& title, const QString& item) {
        QQuickItem* row = sessionRow(w(), title);
        if (!row) return nullptr;
        QTest::mouseMove(w(), centre(row)); // the ⋯ button shows on hover
        QQuickItem* more = nullptr;
        (void)QTest::qWaitFor([&] {
            QList<QQuickItem*> buttons;
            collectItems(row, QStringLiteral("sessionMenuButton"), &buttons);
            more = buttons.isEmpty() || !buttons.first()->isVisible() ? nullptr : buttons.first();
            return more != nullptr;
        });
        if (!more) return nullptr;
        click(w(), more);
        QQuickItem* entry = nullptr;
        if (!QTest::qWaitFor([&] { return (entry = visibleItem(w(), item)) != nullptr; }, 3000))
            return nullptr;
        QTest::qWait(100); // the menu's open transition: a click lands once it is in place
        return entry;
    }

    // Hovers the item `name` until its tooltip `text` shows; empty when the tooltip's background
    // is dark (`dark`) or light as asked, else what it is.
    QString tooltipShade(const QString& name, const QString& text, bool dark) {
        QQuickItem* item = nullptr;
        if (!QTest::qWaitFor([&] { return (item = visibleItem(w(), name)) != nullptr; }, 5000))
            return QStringLiteral("no visible %1").arg(name);
        QTest::mouseMove(w(), QPoint(w()->width() / 2, w()->height() - 5));
        QTest::mouseMove(w(), centre(item));
        QQuickItem* tip = nullptr;
        if (!QTest::qWaitFor(
                [&] {
                    return (tip = itemWithText(w()->contentItem(), "QQuickText", text)) != nullptr;
                },
                5000))
            return QStringLiteral("no tooltip '%1'").arg(text);
        QTest::qWait(300); // its fade-in
        const QImage shot = w()->grabWindow();
        shot.save(QStringLiteral("%1/tooltip-%2.png").arg(kShots, dark ? "dark" : "light"));
        const QPointF in = tip->mapToScene(QPointF(-2, tip->height() / 2)); // its padding
        const QColor bg = shot.pixelColor((in * w()->devicePixelRatio()).toPoint());
        QTest::mouseMove(w(), QPoint(w()->width() / 2, w()->height() - 5));
        if (dark ? bg.lightnessF() < 0.3 : bg.lightnessF() > 0.7) return {};
        return QStringLiteral("the tooltip is %1 in the %2 theme")
            .arg(bg.name(), dark ? QStringLiteral("dark") : QStringLiteral("light"));
    }

    // Exports the chat `title` through its menu and the file dialog into `file`.
    QString exportThroughDialog(const QString& title, const QString& menuItem, const QString& file);

private slots:
    void initTestCase();
    void sendStreamAndStop();
    void continueGrowsTheSameRow();
    void regenerateReplacesTheAnswer();
    void secondChatAndEditAndResend();
    void renameThroughTheMenu();
    void searchNarrowsTheList();
    void exportMarkdownAndJson();
    void everyViewByItsShortcut();
    void budgetTypedDuringAnAnswer();
    void screenshotsOfEveryViewInBothThemes();
    void theNarrowestWindowKeepsViewsInside();
    void quitAndRestart();
    void cleanupTestCase();
};

void TestAppSession::initTestCase() {
    QVERIFY2(QFileInfo::exists(kModel + "/config.json"), qPrintable("no shipped model: " + kModel));
    QVERIFY(m_dir.isValid());
    // The user's documents folder (where the export dialog starts), as the desktop names it.
    QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("Documents"))));
    QFile dirs(qEnvironmentVariable("XDG_CONFIG_HOME") + "/user-dirs.dirs");
    QVERIFY(dirs.open(QIODevice::WriteOnly));
    dirs.write("XDG_DOCUMENTS_DIR=\"" + m_dir.filePath(QStringLiteral("Documents")).toUtf8() +
               "\"\n");
    dirs.close();
    g_previous = qInstallMessageHandler(recordWarnings);
    m_app = std::make_unique<App>(m_dir.filePath(QStringLiteral("colibri.db")));
    QVERIFY(w());
    QVERIFY(QTest::qWaitForWindowExposed(w()));
    QVERIFY(app().ready());
    QCOMPARE(app().controller->modelDir(), QDir::cleanPath(kModel));
    QCOMPARE(app().list().rowCount(), 0);
}

// The first message, typed; the answer streams (its text grows in several updates), and the
// Stop button ends it: the text so far stays, marked stopped.
void TestAppSession::sendStreamAndStop() {
    setAnswerLength(kLongAnswer);
    QSignalSpy flushes(app().controller.get(), &EngineController::piecesFlushed);
    QCOMPARE(sendByKeyboard(QStringLiteral("Tell me a fortune.")), QString());
    QCOMPARE(app().chat().at(0).text, QStringLiteral("Tell me a fortune."));
    // Streaming: the text grows in several updates while the answer runs.
    QTRY_VERIFY_WITH_TIMEOUT(flushes.count() >= 3 || !app().controller->generating(), 30000);
    QVERIFY2(app().controller->generating(), "the answer ended before Stop");
    QVERIFY(!app().chat().at(1).text.isEmpty());
    QVERIFY(app().chat().at(1).streaming);
    QQuickItem* send = visibleItem(w(), QStringLiteral("sendButton"));
    QVERIFY(send);
    QCOMPARE(send->property("text").toString(), QStringLiteral("Stop"));
    click(w(), send);
    QVERIFY(waitAnswerEnd(5000));
    const ChatModel::Message& a = app().chat().at(1);
    QCOMPARE(app().chat().rowCount(), 2);
    QCOMPARE(a.stopReason, QStringLiteral("cancelled"));
    QVERIFY(!a.text.isEmpty());
    QVERIFY2(a.tokens < kLongAnswer, "Stop did not stop");
    QQuickItem* stats = nullptr;
    QTRY_VERIFY((stats = bubbleOf(w(), 1)) != nullptr);
    QList<QQuickItem*> lines;
    collectItems(stats, QStringLiteral("statsLine"), &lines);
    QVERIFY(!lines.isEmpty());
    QTRY_VERIFY2(lines.first()->property("text").toString().endsWith(QStringLiteral("stopped")),
                 qPrintable(lines.first()->property("text").toString()));
    // A long statistics line wraps inside the answer's width: unwrapped ("... · hit rate ·
    // MiB/token · prompt MiB/token · stopped") it once widened the answer past the window.
    const qreal maxWidth = stats->property("maxBubbleWidth").toReal();
    QVERIFY(maxWidth > 0);
    const QRectF line = lines.first()->mapRectToScene(
        QRectF(0, 0, lines.first()->width(), lines.first()->height()));
    QVERIFY2(line.width() <= maxWidth + 1 && line.right() <= w()->width(),
             qPrintable(QStringLiteral("statistics line %1-%2 px, answer at most %3 px, window %4")
                            .arg(line.left())
                            .arg(line.right())
                            .arg(maxWidth)
                            .arg(w()->width())));
    QVERIFY(app().chat().data(app().chat().index(1), ChatModel::CanContinueRole).toBool());
    // The title comes from the first message.
    QTRY_COMPARE(app().sessions->currentTitle(), QStringLiteral("Tell me a fortune."));
}

// Continue under the stopped answer: the same row grows from where it stopped.
void TestAppSession::continueGrowsTheSameRow() {
    setAnswerLength(kShortAnswer);
    const QString before = app().chat().at(1).text;
    QQuickItem* cont = messageAction(w(), 1, QStringLiteral("continueAnswer"));
    QVERIFY(cont);
    click(w(), cont);
    QVERIFY(app().controller->generating());
    QVERIFY(waitAnswerEnd());
    QCOMPARE(app().chat().rowCount(), 2);
    const QString after = app().chat().at(1).text;
    QVERIFY2(after.startsWith(before) && after.size() > before.size(), qPrintable(after));
    QCOMPARE(app().chat().at(1).stopReason, QStringLiteral("max tokens"));
}

// Regenerate under the last answer: its row is replaced by a new answer (a new seed).
void TestAppSession::regenerateReplacesTheAnswer() {
    const QString before = app().chat().at(1).text;
    QSignalSpy removed(app().controller->chatModel(), &QAbstractItemModel::rowsRemoved);
    QQuickItem* regen = messageAction(w(), 1, QStringLiteral("regenerateAnswer"));
    QVERIFY(regen);
    click(w(), regen);
    QVERIFY(waitAnswerEnd());
    QCOMPARE(removed.count(), 1);
    QCOMPARE(removed.first().at(1).toInt(), 1); // the answer's row went
    QCOMPARE(app().chat().rowCount(), 2);
    QCOMPARE(app().chat().at(0).text, QStringLiteral("Tell me a fortune."));
    QVERIFY(!app().chat().at(1).text.isEmpty());
    QVERIFY2(app().chat().at(1).text != before, "the same answer again (same seed?)");
    QVERIFY(app().settle());
    QCOMPARE(app().list().rowCount(), 1);
}

// New chat, a second chat of two turns, then its first message edited and sent again: the
// answers after it are replaced.
void TestAppSession::secondChatAndEditAndResend() {
    const qint64 first = app().sessions->currentSessionId();
    QVERIFY(first > 0);
    QQuickItem* newChat = visibleItem(w(), QStringLiteral("newChatButton"));
    QVERIFY(newChat);
    click(w(), newChat);
    QCOMPARE(app().chat().rowCount(), 0);
    QCOMPARE(app().sessions->currentSessionId(), qint64(0));
    QCOMPARE(sendByKeyboard(QStringLiteral("Define lantern.")), QString());
    QVERIFY(waitAnswerEnd());
    QCOMPARE(sendByKeyboard(QStringLiteral("Quote the Bible.")), QString());
    QVERIFY(waitAnswerEnd());
    QCOMPARE(app().chat().rowCount(), 4);
    QVERIFY(app().settle());
    QTRY_COMPARE(app().list().rowCount(), 2);
    QCOMPARE(app().list().at(0).title, QStringLiteral("Define lantern."));

    QQuickItem* edit = messageAction(w(), 0, QStringLiteral("editMessage"));
    QVERIFY(edit);
    click(w(), edit);
    QQuickItem* box = nullptr;
    QTRY_VERIFY((box = visibleItem(w(), QStringLiteral("editBox"))) != nullptr);
    QTRY_VERIFY(box->hasActiveFocus());
    QCOMPARE(box->property("text").toString(), QStringLiteral("Define lantern."));
    QQuickItem* send = visibleItem(w(), QStringLiteral("editSend"));
    QVERIFY(send);
    // Emptied, the edit has nothing to send: its Send is off, as the composer's (it looked
    // ready and did nothing).
    retype(w(), QStringLiteral("   "));
    QTRY_VERIFY(!send->isEnabled());
    retype(w(), QStringLiteral("Define zeppelin."));
    QTRY_VERIFY(send->isEnabled());
    click(w(), send);
    QVERIFY(app().controller->generating());
    QVERIFY(waitAnswerEnd());
    QCOMPARE(app().chat().rowCount(), 2);
    QCOMPARE(app().chat().at(0).text, QStringLiteral("Define zeppelin."));
    QVERIFY(!app().chat().at(1).text.isEmpty());
    QVERIFY(app().chat().at(1).error.isEmpty());
    QVERIFY(visibleItem(w(), QStringLiteral("editBox")) == nullptr);
}

// The first chat is opened by a click in the list, then renamed through its ⋯ menu and dialog.
void TestAppSession::renameThroughTheMenu() {
    QQuickItem* row = sessionRow(w(), QStringLiteral("Tell me a fortune."));
    QVERIFY(row);
    QSignalSpy opened(app().sessions.get(), &SessionManager::sessionOpened);
    click(w(), row);
    // (The signal may come during the click's own event processing: counted, not waited for.)
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 10000);
    QCOMPARE(app().chat().rowCount(), 2);
    QCOMPARE(app().chat().at(0).text, QStringLiteral("Tell me a fortune."));

    QVERIFY(sessionMenu(QStringLiteral("Tell me a fortune."), QStringLiteral("menuRename")));
    QQuickItem* field = nullptr;
    QTRY_VERIFY((field = visibleItem(w(), QStringLiteral("renameField"))) != nullptr);
    QTRY_VERIFY(field->hasActiveFocus());
    QCOMPARE(field->property("text").toString(), QStringLiteral("Tell me a fortune."));
    retype(w(), QStringLiteral("Fortunes at sea"));
    QTest::keyClick(w(), Qt::Key_Return);
    QTRY_COMPARE(app().sessions->currentTitle(), QStringLiteral("Fortunes at sea"));
    QTRY_VERIFY(sessionRow(w(), QStringLiteral("Fortunes at sea")) != nullptr);
    QVERIFY(visibleItem(w(), QStringLiteral("renameField")) == nullptr);
    QQuickItem* title = visibleItem(w(), QStringLiteral("chatTitle"));
    QVERIFY(title);
    QCOMPARE(title->property("text").toString(), QStringLiteral("Fortunes at sea"));
}

// A word of the second chat only: the list narrows to it, with a snippet of the match; Escape
// in the field shows every chat again.
void TestAppSession::searchNarrowsTheList() {
    QQuickItem* search = visibleItem(w(), QStringLiteral("sessionSearch"));
    QVERIFY(search);
    click(w(), search);
    QTRY_VERIFY(search->hasActiveFocus());
    typeText(w(), QStringLiteral("zeppelin"));
    QTRY_COMPARE_WITH_TIMEOUT(app().list().rowCount(), 1, 10000);
    QCOMPARE(app().list().at(0).title, QStringLiteral("Define lantern."));
    QList<QQuickItem*> rows;
    QTRY_VERIFY((rows = visibleItems(w(), QStringLiteral("sessionRow"))).size() == 1);
    // The row shows the snippet, the match marked, instead of the date.
    QList<QQuickItem*> texts;
    collectItems(rows.first(), QStringLiteral("sessionRowDetail"), &texts);
    QString snippet;
    for (QQuickItem* t : texts)
        if (t->inherits("QQuickText") && t->property("text").toString().contains(u'«'))
            snippet = t->property("text").toString();
    QVERIFY2(snippet.contains(QStringLiteral("«zeppelin»"), Qt::CaseInsensitive),
             qPrintable(snippet));
    QTest::keyClick(w(), Qt::Key_Escape);
    QTRY_COMPARE_WITH_TIMEOUT(app().list().rowCount(), 2, 10000);
    QCOMPARE(search->property("text").toString(), QString());
}

QString TestAppSession::exportThroughDialog(const QString& title, const QString& menuItem,
                                            const QString& fileName) {
    if (!sessionMenu(title, menuItem)) return QStringLiteral("no %1 in the menu").arg(menuItem);
    // Qt's own file dialog (no desktop's under Xvfb): a popup in the window.
    QQuickItem* name = nullptr;
    if (!QTest::qWaitFor(
            [&] { return (name = visibleItem(w(), QStringLiteral("fileNameTextField"))); }, 5000))
        return QStringLiteral("the file dialog has no file name field");
    QTest::qWait(200); // its open transition
    QQuickItem* dialog = name;
    while (dialog->parentItem() && !dialog->inherits("QQuickPopupItem"))
        dialog = dialog->parentItem();
    // It opens in the documents folder, the file named after the chat.
    const QString suffix = fileName.section(u'.', -1);
    if (name->property("text").toString() != title + "." + suffix)
        return QStringLiteral("the file name offered is %1").arg(name->property("text").toString());
    click(w(), name);
    retype(w(), fileName);
    QQuickItem* accept = itemWithText(dialog, "QQuickAbstractButton", QStringLiteral("Export"));
    if (!accept) return QStringLiteral("the file dialog has no Export button");
    QSignalSpy exported(app().sessions.get(), &SessionManager::exported);
    click(w(), accept);
    if (!QTest::qWaitFor([&] { return !exported.isEmpty(); }, 10000))
        return QStringLiteral("nothing exported");
    return exported.first().at(1).toString();
}

// Through the ⋯ menu and the file dialog: the chat as Markdown and as JSON, in the user's
// documents folder (the dialog's starting folder).
void TestAppSession::exportMarkdownAndJson() {
    const QString docs = m_dir.filePath(QStringLiteral("Documents"));
    const QString md = docs + "/fortunes.md", js = docs + "/fortunes.json";
    QString error =
        exportThroughDialog(QStringLiteral("Fortunes at sea"), QStringLiteral("menuExportMarkdown"),
                            QStringLiteral("fortunes.md"));
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QTRY_COMPARE(app().controller->errorText(), QStringLiteral("Exported the chat to %1.").arg(md));
    error = exportThroughDialog(QStringLiteral("Fortunes at sea"), QStringLiteral("menuExportJson"),
                                QStringLiteral("fortunes.json"));
    QVERIFY2(error.isEmpty(), qPrintable(error));

    QFile mdFile(md);
    QVERIFY2(mdFile.open(QIODevice::ReadOnly), qPrintable(md));
    const QString text = QString::fromUtf8(mdFile.readAll());
    QVERIFY2(text.contains(QStringLiteral("Fortunes at sea")), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("Tell me a fortune.")));
    QVERIFY(text.contains(app().chat().at(1).text.trimmed().left(40)));
    QFile jsFile(js);
    QVERIFY2(jsFile.open(QIODevice::ReadOnly), qPrintable(js));
    const QJsonObject o = QJsonDocument::fromJson(jsFile.readAll()).object();
    QCOMPARE(o.value("format").toString(), QStringLiteral("colibri-session"));
    const QJsonArray messages = o.value("messages").toArray();
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[1].toObject().value("text").toString(), app().chat().at(1).text);
    // The window said where it went, as a notice.
    QTRY_COMPARE(app().controller->errorText(), QStringLiteral("Exported the chat to %1.").arg(js));
    QCOMPARE(app().controller->noticeKind(), QStringLiteral("info"));
    QVERIFY(visibleItem(w(), QStringLiteral("fileNameTextField")) == nullptr);
}

// Every view by its shortcut; the one shown is the one asked for.
void TestAppSession::everyViewByItsShortcut() {
    const struct {
        Qt::Key key;
        const char* view;
        const char* item;
    } steps[] = {{Qt::Key_2, "tiers", "tiersView"},       {Qt::Key_5, "brain", "brainView"},
                 {Qt::Key_6, "atlas", "atlasView"},       {Qt::Key_3, "charts", "chartsView"},
                 {Qt::Key_4, "settings", "settingsView"}, {Qt::Key_O, "models", "modelsView"},
                 {Qt::Key_1, "chat", "chatPage"}};
    const QStringList items = {"chatPage",   "tiersView",  "brainView",   "atlasView",
                               "chartsView", "modelsView", "settingsView"};
    for (const auto& s : steps) {
        shortcut(s.key);
        QTRY_COMPARE(app().currentView(), QString::fromLatin1(s.view));
        for (const QString& item : items)
            QCOMPARE(visibleItem(w(), item) != nullptr, item == QLatin1String(s.item));
    }
    QQuickItem* input = visibleItem(w(), QStringLiteral("composerInput"));
    QVERIFY(input);
    QTRY_VERIFY(input->hasActiveFocus()); // back in the chat, typing goes on
}

// During an answer: the Tiers view (Ctrl+2), the RAM budget typed into its exact entry; one
// token later the engine's tier status has the new budget in force and the experts' allocation
// within it.
void TestAppSession::budgetTypedDuringAnAnswer() {
    TierMonitor* tiers = app().controller->tiers();
    QTRY_VERIFY_WITH_TIMEOUT(tiers->available(), 5000);
    const double minimum = tiers->minimumBudgetBytes();
    QVERIFY2(tiers->budgetBytes() > minimum, "the budget cannot shrink: nothing to show");
    setAnswerLength(kLongAnswer);
    QCOMPARE(sendByKeyboard(QStringLiteral("Tell me another fortune.")), QString());
    const int row = app().chat().rowCount() - 1;
    QTRY_VERIFY_WITH_TIMEOUT(app().chat().at(row).text.size() > 4, 30000);
    shortcut(Qt::Key_2);
    QTRY_COMPARE(app().currentView(), QStringLiteral("tiers"));
    QQuickItem* field = visibleItem(w(), QStringLiteral("budgetField"));
    QVERIFY(field);
    click(w(), field);
    QTRY_VERIFY(field->hasActiveFocus());
    // The smallest budget, in MiB as the field shows it (rounded to 0.1 MiB; the engine clamps
    // a value under the minimum to it).
    const QString typed = QString::number(minimum / 1048576.0, 'f', 1);
    const uint64_t limit = uint64_t(std::max(minimum, typed.toDouble() * 1048576.0));
    retype(w(), typed);
    QTest::keyClick(w(), Qt::Key_Return);
    QVERIFY2(app().controller->generating(), "the answer ended before the budget was typed");
    // The budget in force, then one token later (a decode step's status after it).
    uint64_t inForceSerial = 0;
    QTRY_VERIFY_WITH_TIMEOUT(
        (inForceSerial = tiers->status().serial, tiers->status().residency.budgetBytes <= limit),
        10000);
    QTRY_VERIFY_WITH_TIMEOUT(
        tiers->status().serial > inForceSerial && tiers->status().last.tokens == 1, 10000);
    const TierStatus s = tiers->status();
    QVERIFY2(s.residency.budgetBytes <= limit,
             qPrintable(QString::number(s.residency.budgetBytes)));
    QVERIFY2(s.residency.allocatedBytes <= s.residency.budgetBytes,
             qPrintable(QStringLiteral("%1 bytes allocated, budget %2")
                            .arg(s.residency.allocatedBytes)
                            .arg(s.residency.budgetBytes)));
    QVERIFY2(app().controller->generating() || app().chat().at(row).tokens > 1,
             "no token after the budget");
    // The view shows it.
    QQuickItem* totals = visibleItem(w(), QStringLiteral("ramTotals"));
    QVERIFY(totals);
    QTRY_VERIFY2(totals->property("text").toString().contains(
                     QStringLiteral(" of %1 MiB").arg(minimum / 1048576.0, 0, 'f', 1)),
                 qPrintable(totals->property("text").toString()));
    QVERIFY(waitAnswerEnd());
    QVERIFY(app().chat().at(row).error.isEmpty());
}

// Every view in the light and dark themes: screenshots/session-<view>-<theme>.png. The Tiers
// bars and the charts drew (coloured, not uniform).
void TestAppSession::screenshotsOfEveryViewInBothThemes() {
    QDir().mkpath(kShots);
    const struct {
        Qt::Key key;
        const char* view;
    } views[] = {{Qt::Key_1, "chat"},   {Qt::Key_2, "tiers"},  {Qt::Key_5, "brain"},
                 {Qt::Key_3, "charts"}, {Qt::Key_O, "models"}, {Qt::Key_4, "settings"}};
    for (const QString& theme : {QStringLiteral("light"), QStringLiteral("dark")}) {
        app().settings->setTheme(theme);
        QCOMPARE(app().settings->dark(), theme == QLatin1String("dark"));
        for (const auto& v : views) {
            shortcut(v.key);
            QTRY_COMPARE(app().currentView(), QString::fromLatin1(v.view));
            QTest::qWait(200); // the view's first frames (charts lay out their series)
            const QImage img = w()->grabWindow();
            const QString file =
                QStringLiteral("%1/session-%2-%3.png").arg(kShots, QLatin1String(v.view), theme);
            QVERIFY(img.save(file));
            qInfo("screenshot: %s", qPrintable(file));
            const QColor bg = img.pixelColor(img.width() - 4, img.height() - 4);
            QVERIFY2(theme == "dark" ? bg.lightnessF() < 0.3 : bg.lightnessF() > 0.7,
                     qPrintable(file + ": " + bg.name()));
            const qreal dpr = w()->devicePixelRatio();
            if (QLatin1String(v.view) == "tiers") {
                QVERIFY(app().controller->tiers()->allocatedBytes() > 0); // the RAM bar has parts
                for (const char* bar : {"ramBar", "hotStoreBar", "diskBar"}) {
                    QQuickItem* item = visibleItem(w(), QString::fromLatin1(bar));
                    QVERIFY2(item, bar);
                    const QString wrong = barDrew(img, item, dpr);
                    QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
                }
            }
            if (QLatin1String(v.view) == "charts") {
                const QString failed = chartsDrew(w());
                QVERIFY2(failed.isEmpty(), qPrintable(failed));
            }
        }
    }
    // The ⋯ menu follows a theme changed while the app runs (it kept the palette it was made
    // with: dark items in the light theme).
    shortcut(Qt::Key_1);
    QTRY_COMPARE(app().currentView(), QStringLiteral("chat"));
    for (const QString& theme : {QStringLiteral("dark"), QStringLiteral("light")}) {
        app().settings->setTheme(theme);
        QTest::qWait(100);
        QQuickItem* entry = openSessionMenu(app().sessions->currentTitle(), "menuRename");
        QVERIFY2(entry, qPrintable(theme));
        QQuickItem* last = visibleItem(w(), QStringLiteral("menuDelete")); // not highlighted
        QVERIFY(last);
        const QImage img = w()->grabWindow();
        QVERIFY(img.save(QStringLiteral("%1/session-menu-%2.png").arg(kShots, theme)));
        // An item's background, right of its text.
        const QPointF at = last->mapToScene(QPointF(last->width() - 6, last->height() / 2));
        const QColor bg = img.pixelColor((at * w()->devicePixelRatio()).toPoint());
        QVERIFY2(theme == "dark" ? bg.lightnessF() < 0.3 : bg.lightnessF() > 0.7,
                 qPrintable(QStringLiteral("%1 theme, menu at %2").arg(theme, bg.name())));
        QTest::keyClick(w(), Qt::Key_Escape);
        QTRY_VERIFY(visibleItem(w(), QStringLiteral("menuRename")) == nullptr);
    }
    app().settings->setTheme(QStringLiteral("light"));
    shortcut(Qt::Key_1);
}

// Ctrl+Q, then the app is started again on the same settings and database: the list of chats
// and the last chat shown come back, with its KV cache (its size shown; the next answer reuses
// the stored tokens).
// At the window's minimum size (640 x 420) the Tiers and Settings views stay inside the window:
// the tier table's numeric columns and the settings' names, choices and combo boxes shorten
// (the table once pushed the RAM card and the place names past the right edge, the theme
// choices and the GPU box ran off it).
void TestAppSession::theNarrowestWindowKeepsViewsInside() {
    const QSize size = w()->size();
    w()->resize(640, 420);
    QTRY_COMPARE(w()->width(), 640);
    const struct {
        Qt::Key key;
        const char* view;
        QStringList items;
    } views[] = {{Qt::Key_2, "tiers", {"ramBar", "ramTotals", "tierRow_cache", "tierRow_free"}},
                 {Qt::Key_4, "settings", {"themeChoice", "readModeSetting", "gpuDeviceBox"}}};
    for (const auto& v : views) {
        shortcut(v.key);
        QTRY_COMPARE(app().currentView(), QString::fromLatin1(v.view));
        QTest::qWait(200);
        QVERIFY(w()->grabWindow().save(kShots + QStringLiteral("/narrow-%1.png").arg(v.view)));
        for (const QString& name : v.items) {
            QQuickItem* item = visibleItem(w(), name);
            QVERIFY2(item, qPrintable(name));
            const qreal right = item->mapToScene(QPointF(item->width(), 0)).x();
            QVERIFY2(right <= w()->width() + 0.5,
                     qPrintable(QStringLiteral("%1 ends at x %2 in a window %3 wide")
                                    .arg(name)
                                    .arg(right)
                                    .arg(w()->width())));
        }
    }
    // The place names keep some room beside the numbers.
    shortcut(Qt::Key_2);
    QTRY_COMPARE(app().currentView(), QStringLiteral("tiers"));
    QQuickItem* row = visibleItem(w(), QStringLiteral("tierRow_cache"));
    QVERIFY(row);
    const QList<QQuickItem*> cells = row->childItems();
    QVERIFY(cells.size() >= 2);
    QVERIFY2(cells.at(1)->width() >= 60,
             qPrintable(QStringLiteral("the place name is %1 px wide").arg(cells.at(1)->width())));
    w()->resize(size);
    shortcut(Qt::Key_1);
}

void TestAppSession::quitAndRestart() {
    QVERIFY(app().settle());
    const qint64 shown = app().sessions->currentSessionId();
    QVERIFY(shown > 0);
    QStringList titles;
    for (int i = 0; i < app().list().rowCount(); ++i)
        titles << app().list().at(i).title;
    QStringList texts;
    for (int i = 0; i < app().chat().rowCount(); ++i)
        texts << app().chat().at(i).text;
    // The window's size comes back too (it came back at 960 x 600 whatever the user made it).
    const QSize chosen(1010, 640);
    app().settings->setTheme(QStringLiteral("dark")); // the next start begins dark
    w()->resize(chosen);
    QTRY_COMPARE(w()->size(), chosen);
    QTRY_COMPARE(app().settings->windowSize(), chosen); // saved once the resizing stops
    QSignalSpy quit(app().engine.get(), &QQmlEngine::quit);
    shortcut(Qt::Key_Q);
    QTRY_COMPARE(quit.count(), 1); // main() connects it to the application's quit
    m_app.reset();

    m_app = std::make_unique<App>(QString()); // the database as the settings remember it
    QVERIFY(w());
    QVERIFY(QTest::qWaitForWindowExposed(w()));
    QCOMPARE(w()->size(), chosen);
    QCOMPARE(app().settings->usageDatabase(), m_dir.filePath(QStringLiteral("colibri.db")));
    // Started dark: the tooltips are dark too (the one popup all tooltips share stayed white).
    QVERIFY(app().settings->dark());
    QString tipProblem = tooltipShade(QStringLiteral("chatSettingsButton"),
                                      QStringLiteral("This chat's settings"), true);
    QVERIFY2(tipProblem.isEmpty(), qPrintable(tipProblem));
    app().settings->setTheme(QStringLiteral("light"));
    tipProblem = tooltipShade(QStringLiteral("chatSettingsButton"),
                              QStringLiteral("This chat's settings"), false);
    QVERIFY2(tipProblem.isEmpty(), qPrintable(tipProblem));
    QVERIFY(app().ready());
    QTRY_COMPARE_WITH_TIMEOUT(app().sessions->currentSessionId(), shown, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(app().chat().rowCount(), int(texts.size()), 10000);
    for (int i = 0; i < texts.size(); ++i)
        QCOMPARE(app().chat().at(i).text, texts[i]);
    QStringList after;
    for (int i = 0; i < app().list().rowCount(); ++i)
        after << app().list().at(i).title;
    QCOMPARE(after, titles);
    QTRY_VERIFY(sessionRow(w(), QStringLiteral("Fortunes at sea")) != nullptr);
    QTest::qWait(150);
    QVERIFY(w()->grabWindow().save(kShots + "/session-restarted.png"));

    // The chat's KV cache came back with it: its size beside the context meter and in its row
    // of the list, and the next answer typed into the window goes on from the stored tokens.
    QQuickItem* kv = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((kv = visibleItem(w(), QStringLiteral("chatKvSize"))) != nullptr,
                             10000);
    QVERIFY2(kv->property("text").toString().startsWith(QStringLiteral("KV cache ")),
             qPrintable(kv->property("text").toString()));
    QQuickItem* row = sessionRow(w(), app().sessions->currentTitle());
    QVERIFY(row);
    QList<QQuickItem*> detail;
    collectItems(row, QStringLiteral("sessionRowDetail"), &detail);
    QVERIFY(!detail.isEmpty());
    QVERIFY2(detail.first()->property("text").toString().contains(QStringLiteral("KV")),
             qPrintable(detail.first()->property("text").toString()));
    // The toolbar's title, context meter and KV size shorten rather than widening the chat: at
    // the window's minimum size the toolbar and the Send button stay inside the window (the
    // toolbar once pushed the Send button and the answers off its right edge).
    const QSize size = w()->size();
    for (const QSize& s : {QSize(640, 420), QSize(960, 600), QSize(1280, 800)}) {
        w()->resize(s);
        QTRY_COMPARE(w()->width(), s.width());
        QTest::qWait(100);
        for (const char* name : {"chatToolbar", "sendButton", "chatKvSize"}) {
            QQuickItem* item = visibleItem(w(), QString::fromLatin1(name));
            QVERIFY2(item, name);
            const qreal right = item->mapToScene(QPointF(item->width(), 0)).x();
            QVERIFY2(right <= w()->width() + 0.5,
                     qPrintable(QStringLiteral("%1 ends at x %2 in a window %3 wide")
                                    .arg(QLatin1String(name))
                                    .arg(right)
                                    .arg(w()->width())));
        }
        // ... and the title keeps a few words (it was the one item that shrank, to nothing).
        QQuickItem* title = visibleItem(w(), QStringLiteral("chatTitle"));
        QVERIFY(title);
        QVERIFY2(title->width() >= std::min<qreal>(title->implicitWidth(), 80),
                 qPrintable(QStringLiteral("the title is %1 px wide").arg(title->width())));
        // With room for everything, nothing is shortened (the layout's whole pixels once cut
        // the meter's text 0.4 px short: "32 / 512 toke…").
        if (s.width() >= 1280)
            for (const char* name : {"contextText", "chatKvSize", "chatTitle"})
                QVERIFY2(
                    !visibleItem(w(), QString::fromLatin1(name))->property("truncated").toBool(),
                    name);
        QVERIFY(w()->grabWindow().save(kShots + QStringLiteral("/chat-%1.png").arg(s.width())));
    }
    w()->resize(size);
    QTRY_VERIFY_WITH_TIMEOUT(app().sessions->learning(), 10000); // the model's identity is known
    setAnswerLength(kShortAnswer);
    std::optional<storage::RunRecord> run;
    const auto c = connect(app().sessions.get(), &SessionManager::runAdded,
                           [&](const storage::RunRecord& r) { run = r; });
    QCOMPARE(sendByKeyboard(QStringLiteral("And then?")), QString());
    QVERIFY(waitAnswerEnd());
    disconnect(c);
    QVERIFY(run.has_value());
    QVERIFY2(run->reusedTokens > 0, "the restarted chat read its whole conversation again");
    QTRY_VERIFY_WITH_TIMEOUT(kv->property("text").toString().startsWith("KV cache "), 10000);
}

void TestAppSession::cleanupTestCase() {
    m_app.reset();
    QStringList qml;
    for (const QString& warning : g_warnings)
        if (warning.contains(QStringLiteral(".qml"))) qml << warning;
    QVERIFY2(qml.isEmpty(), qPrintable(qml.join('\n')));
}

int main(int argc, char** argv) {
    // The user's settings and data stay out of it: a temporary XDG_CONFIG_HOME (its
    // user-dirs.dirs, written by initTestCase, names the documents folder) and XDG_DATA_HOME.
    QTemporaryDir home;
    qputenv("XDG_CONFIG_HOME", home.path().toLocal8Bit());
    qputenv("XDG_DATA_HOME", (home.path() + "/data").toLocal8Bit());
    QApplication app(argc, argv); // QApplication, not QGuiApplication: the Charts view
    QApplication::setOrganizationName(QStringLiteral("Colibri"));
    QApplication::setApplicationName(QStringLiteral("Colibri Desktop"));
    TestAppSession t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_app_session.moc"
