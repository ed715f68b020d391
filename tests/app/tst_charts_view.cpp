// The Charts view in a real window under Xvfb (the CTest command starts xvfb-run), fed by the real
// EngineController + SessionManager on the fixture model: empty state first; while an answer
// streams, the live series; after a few answers every chart drew its series (pixel checks in each
// plot area) at 800x600 and 1600x1000, in the light and (when Theme has one) dark palette; after a
// restart the reopened session's answers are drawn again from the database; a hidden view
// catches up when shown.
// Saves screenshots/charts*.png.
#include "session_manager.h"
#include "turn_stats_model.h"

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QQmlApplicationEngine>
#include <QQmlContext>
#include <QQmlProperty>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");
const QString kShots = QStringLiteral(COLI_BINARY_DIR "/screenshots");
const char* const kCharts[] = {"rateChart", "liveChart", "ttftChart",
                               "hitChart",  "mibChart",  "splitChart"};

struct View {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<SessionManager> sessions;
    std::unique_ptr<TurnStatsModel> stats;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    explicit View(const QString& db) {
        // The smallest RAM budget (the working set): decode steps read experts, so the "read per
        // answer token" chart has a curve (with every expert cached after the first prompt it is
        // 0 from then on, drawn on the axis).
        controller =
            std::make_unique<EngineController>(WorkerOptions{.threads = 1, .expertBudgetBytes = 1});
        setLength(24);
        sessions = std::make_unique<SessionManager>(controller.get(),
                                                    StorageWorkerOptions{.path = db.toStdString()});
        stats = std::make_unique<TurnStatsModel>(sessions.get(), controller.get());
        engine = std::make_unique<QQmlApplicationEngine>();
        engine->addImportPath(QStringLiteral(COLI_QML_IMPORT_DIR));
        engine->setInitialProperties(
            {{QStringLiteral("controller"), QVariant::fromValue<QObject*>(controller.get())},
             {QStringLiteral("stats"), QVariant::fromValue<QObject*>(stats.get())}});
        engine->loadData(
            "import QtQuick\nimport QtQuick.Controls\nimport Colibri\n"
            "ApplicationWindow { id: w; property QtObject controller; property "
            "QtObject stats; readonly property QtObject theme: Theme; "
            "width: 800; height: 600; visible: true; "
            "ChartsView { objectName: \"charts\"; anchors.fill: parent; controller: w.controller; "
            "stats: w.stats } }");
        if (!engine->rootObjects().isEmpty())
            window = qobject_cast<QQuickWindow*>(engine->rootObjects().first());
        controller->loadModel(kModel);
    }
    ~View() {
        sessions->shutdown();
        controller->shutdown();
        engine.reset();
        stats.reset();
        sessions.reset();
    }
    void setLength(int tokens) {
        GenerateParams p;
        p.maxNewTokens = tokens;
        p.ignoreEos = true;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
    }
    bool ready() {
        return QTest::qWaitFor([&] { return controller->loadState() != "loading"; }, 60000) &&
               controller->loadState() == "ready";
    }
    bool ask(const QString& text) {
        QSignalSpy done(controller.get(), &EngineController::answerFinished);
        return controller->send(text) && done.wait(60000);
    }
    template <class T = QQuickItem> T* find(const char* name) const {
        return window->findChild<T*>(QString::fromLatin1(name));
    }
    void resize(int w, int h) {
        window->resize(w, h);
        QTest::qWait(200); // layout and the charts' scene follow the new size
    }
    QImage shot(const QString& name) const {
        const QImage img = window->grabWindow();
        QDir().mkpath(kShots);
        img.save(kShots + "/" + name);
        return img;
    }
};

// Pixels of series colour (saturated) inside the chart's plot area, and whether the plot area's
// background is dark.
struct PlotPixels {
    int saturated = 0;
    bool darkBackground = false;
};
PlotPixels plotPixels(const View& v, const QImage& img, const char* chartName) {
    PlotPixels out;
    auto* chart = v.find(chartName);
    if (!chart) return out;
    const QRectF plot = QQmlProperty::read(chart, QStringLiteral("plotArea")).toRectF();
    const QPointF tl = chart->mapToScene(plot.topLeft());
    const qreal dpr = v.window->devicePixelRatio();
    for (int y = 1; y < int(plot.height()) - 1; y += 2)
        for (int x = 1; x < int(plot.width()) - 1; x += 2) {
            const QColor c = img.pixelColor(int((tl.x() + x) * dpr), int((tl.y() + y) * dpr));
            if (c.hsvSaturation() > 90 && c.value() > 60) ++out.saturated;
        }
    const QColor corner = img.pixelColor(int((tl.x() + 2) * dpr), int((tl.y() + 2) * dpr));
    out.darkBackground = corner.lightnessF() < 0.35;
    return out;
}

// Every chart drew its series inside its plot area; each is scrolled into the window first (at
// 800x600 the view scrolls). `img` is the last grab.
bool everyChartDrew(View& v, QImage* img, QString* which) {
    auto* scroll = v.find("chartsScroll");
    auto* flick = scroll ? qvariant_cast<QQuickItem*>(scroll->property("contentItem")) : nullptr;
    if (!flick) {
        *which = QStringLiteral("no scrolling area");
        return false;
    }
    for (const char* name : kCharts) {
        auto* chart = v.find(name);
        if (!chart) {
            *which = QStringLiteral("%1: not found").arg(name);
            return false;
        }
        const qreal top =
            chart->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0))
                .y();
        const qreal room = flick->property("contentHeight").toReal() - flick->height();
        flick->setProperty("contentY", std::clamp(top - 40, 0.0, std::max(0.0, room)));
        QTest::qWait(50);
        *img = v.window->grabWindow();
        const PlotPixels p = plotPixels(v, *img, name);
        if (p.saturated < 15) {
            *which = QStringLiteral("%1: %2 series pixels").arg(name).arg(p.saturated);
            return false;
        }
    }
    flick->setProperty("contentY", 0);
    QTest::qWait(50);
    return true;
}
} // namespace

class TestChartsView : public QObject {
    Q_OBJECT
private slots:
    void chartsOfASessionLightDarkAndReopened() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        {
            View v(db);
            QVERIFY(v.window);
            QVERIFY(QTest::qWaitForWindowExposed(v.window));
            QVERIFY(v.ready());
            auto* empty = v.find("chartsEmpty");
            QVERIFY(empty);
            QVERIFY(empty->isVisible());
            v.shot("charts-empty.png");

            // While a long answer streams: the live curve and the live point of the speed chart;
            // then Stop (a stopped answer has its run too).
            v.setLength(4000);
            QSignalSpy done(v.controller.get(), &EngineController::answerFinished);
            QVERIFY(v.controller->send("Tell me a long story about the sea."));
            LiveRateModel* live = v.stats->live();
            QVERIFY(
                QTest::qWaitFor([&] { return live->rowCount() >= 3 || !done.isEmpty(); }, 60000));
            QVERIFY2(done.isEmpty(), "the answer ended before three live samples");
            QTest::qWait(100); // a frame with them
            QVERIFY(!empty->isVisible());
            // Series are not QObject children of the window: found by id in the view.
            QObject* liveNow = qmlContext(v.find("rateChart"))->objectForName("liveNow");
            QVERIFY(liveNow);
            QCOMPARE(QQmlProperty::read(liveNow, QStringLiteral("count")).toInt(), 1);
            v.shot("charts-streaming.png");
            v.controller->stop();
            QVERIFY(!done.isEmpty() || done.wait(60000));
            QVERIFY(!live->streaming());
            QCOMPARE(v.stats->rowCount(), 1);

            // Answers of several lengths; the last one long enough for a live curve.
            const int lengths[] = {8, 64, 24, 120, 600};
            for (int n : lengths) {
                v.setLength(n);
                QVERIFY(v.ask(QStringLiteral("And %1 more words, please.").arg(n)));
            }
            QCOMPARE(v.stats->rowCount(), 6);
            QVERIFY2(live->rowCount() >= 2, qPrintable(QString::number(live->rowCount())));

            // Hidden (another view shown), the charts wait; shown again, they catch up.
            QQmlContext* ids = qmlContext(v.find("rateChart"));
            auto count = [&](const char* series) {
                return QQmlProperty::read(ids->objectForName(series), "count").toInt();
            };
            QCOMPARE(count("rateLine"), 6);
            QCOMPARE(count("liveLine"), live->rowCount());
            auto* charts = v.find("charts");
            QVERIFY(charts);
            charts->setVisible(false);
            v.setLength(300);
            QVERIFY(v.ask(QStringLiteral("One more, while the charts are hidden.")));
            QCOMPARE(v.stats->rowCount(), 7);
            QCOMPARE(count("rateLine"), 6);
            charts->setVisible(true);
            QCOMPARE(count("rateLine"), 7);
            QCOMPARE(count("liveLine"), live->rowCount());
            QVERIFY(!empty->isVisible());

            QString which;
            QImage img;
            v.resize(800, 600);
            QVERIFY2(everyChartDrew(v, &img, &which), qPrintable(which));
            img = v.shot("charts.png");
            v.resize(1600, 1000);
            QVERIFY2(everyChartDrew(v, &img, &which), qPrintable(which));
            img = v.shot("charts-wide.png");
            QVERIFY(!plotPixels(v, img, "rateChart").darkBackground);

            // The dark palette, when Theme has one (the window shell adds it).
            auto* theme = qvariant_cast<QObject*>(v.window->property("theme"));
            QVERIFY(theme);
            if (theme->metaObject()->indexOfProperty("dark") >= 0) {
                theme->setProperty("dark", true);
                v.resize(800, 600);
                QVERIFY2(everyChartDrew(v, &img, &which), qPrintable(which));
                img = v.shot("charts-dark.png");
                QVERIFY(plotPixels(v, img, "rateChart").darkBackground);
                v.resize(1600, 1000);
                QVERIFY2(everyChartDrew(v, &img, &which), qPrintable(which));
                img = v.shot("charts-dark-wide.png");
                QVERIFY(plotPixels(v, img, "rateChart").darkBackground);
                theme->setProperty("dark", false);
            } else {
                qWarning("Theme has no dark palette yet: charts-dark.png not made");
            }

            // An answer with a GPU tier (a saved run with VRAM hits, schema version 6): the split
            // gets its VRAM series and legend entry; answers without one are drawn at 0 there.
            QQmlContext* hitIds = qmlContext(v.find("hitChart"));
            QObject* vramLine = hitIds->objectForName("vramLine");
            QVERIFY(vramLine);
            QVERIFY(!QQmlProperty::read(vramLine, "visible").toBool()); // no GPU answer yet
            storage::RunRecord gpu;
            gpu.generatedTokens = 20;
            gpu.tokensPerSecond = 9;
            gpu.ttftSeconds = 0.2;
            gpu.tiers = {.routed = 1000,
                         .hitsPinned = 100,
                         .hitsCache = 100,
                         .misses = 100,
                         .tokens = 20,
                         .hitsVram = 700};
            v.stats->appendRun(gpu);
            QCOMPARE(v.stats->rowCount(), 8);
            QVERIFY(v.stats->vram());
            QCOMPARE(count("vramLine"), 8);
            QVERIFY(QQmlProperty::read(vramLine, "visible").toBool());
            auto* hitCard = v.find("hitCard");
            QVERIFY(hitCard);
            const QVariantList legend = hitCard->property("legend").toList();
            QVERIFY(!legend.isEmpty());
            QCOMPARE(legend.first().toMap().value("name").toString(), QStringLiteral("VRAM"));
            QVERIFY2(hitCard->property("note").toString().contains("VRAM + RAM"),
                     qPrintable(hitCard->property("note").toString()));
            v.resize(1600, 1000);
            QVERIFY2(everyChartDrew(v, &img, &which), qPrintable(which));
            v.shot("charts-vram.png");
            QVERIFY(QTest::qWaitFor([&] { return v.sessions->worker()->pending() == 0; }, 10000));
        }
        // Restart: the last session comes back with its answers, drawn from the database.
        View v(db);
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        QVERIFY(v.ready());
        QTRY_COMPARE_WITH_TIMEOUT(v.stats->rowCount(), 7, 10000);
        v.resize(1600, 1000); // every chart in the window at once
        const QImage img = v.shot("charts-reopened.png");
        // No answer was written since the restart: the live chart is empty, the rest drew.
        for (const char* name : kCharts) {
            if (QByteArray(name) == "liveChart") continue;
            QVERIFY2(plotPixels(v, img, name).saturated >= 15, name);
        }
    }
};

int main(int argc, char** argv) {
    QApplication app(argc, argv); // Qt Charts needs QApplication (Widgets)
    TestChartsView t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_charts_view.moc"
