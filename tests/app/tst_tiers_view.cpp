// The Tiers view in a real window under Xvfb (the CTest command starts xvfb-run): after a load
// the bars show the model's experts; during an answer the user types a lower RAM budget into the
// view's exact entry, and the engine's tier status shows it in force one token later with the
// allocation within it; the answer is the same as with the budget untouched; the prefetch switch
// reaches the engine. Saves screenshots/tiers.png and checks that the RAM bar drew. The placement
// plan's expected hit rate and tok/s show beside the measured ones once the cache has learned
// heat (screenshots/tiers-plan-{light,dark}.png).
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"

#include <QApplication>
#include <QDir>
#include <QImage>
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
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

struct View {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    View() {
        controller = std::make_unique<EngineController>(WorkerOptions{.threads = 1});
        GenerateParams p;
        p.maxNewTokens = 400; // long enough to type a budget while it streams
        p.ignoreEos = true;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
        engine = std::make_unique<QQmlApplicationEngine>();
        engine->addImportPath(QStringLiteral(COLI_QML_IMPORT_DIR));
        engine->setInitialProperties(
            {{QStringLiteral("controller"), QVariant::fromValue<QObject*>(controller.get())}});
        engine->loadData("import QtQuick\nimport QtQuick.Controls\nimport Colibri\n"
                         "ApplicationWindow { id: w; property QtObject controller; width: 900; "
                         "height: 640; visible: true; property bool dark: false; "
                         "Binding { target: Theme; property: 'dark'; value: w.dark } "
                         "TiersView { anchors.fill: parent; controller: w.controller } }");
        if (!engine->rootObjects().isEmpty())
            window = qobject_cast<QQuickWindow*>(engine->rootObjects().first());
    }
    ~View() {
        controller->shutdown();
        engine.reset();
    }
    template <class T = QQuickItem> T* find(const char* name) const {
        return window->findChild<T*>(QString::fromLatin1(name));
    }
};

bool loadModel(View& v) {
    v.controller->loadModel(kModel);
    return QTest::qWaitFor([&] { return v.controller->loadState() != "loading"; }, 60000) &&
           v.controller->loadState() == "ready";
}

// The answer's text once it ends.
QString answer(View& v, const std::function<void()>& whileStreaming = {}) {
    QSignalSpy done(v.controller.get(), &EngineController::answerFinished);
    if (!v.controller->send(QStringLiteral("Tell me about the sea."))) return {};
    if (whileStreaming) whileStreaming();
    if (done.isEmpty() && !done.wait(60000)) return {};
    ChatModel* chat = v.controller->chatModel();
    return chat->at(chat->rowCount() - 1).text;
}
} // namespace

class TestTiersView : public QObject {
    Q_OBJECT
private slots:
    void budgetTypedDuringAnAnswerHoldsOneTokenLater() {
        QString reference;
        {
            View ref;
            QVERIFY(ref.window);
            QVERIFY(loadModel(ref));
            reference = answer(ref);
            QVERIFY(!reference.isEmpty());
        }
        View v;
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        QVERIFY(loadModel(v));
        TierMonitor* tiers = v.controller->tiers();
        QTRY_VERIFY_WITH_TIMEOUT(tiers->available(), 5000);
        const double minimum = tiers->minimumBudgetBytes();
        QVERIFY2(tiers->budgetBytes() > minimum, "the fixture's budget must be able to shrink");
        auto* field = v.find("budgetField");
        QVERIFY(field);
        bool typedWhileStreaming = false;

        const QString text = answer(v, [&] {
            // Wait for the answer's first tokens, then type the minimum in MiB as a user would.
            QTRY_VERIFY_WITH_TIMEOUT(v.controller->chatModel()->at(1).text.size() > 4, 30000);
            const QPointF c = field->mapToScene(QPointF(field->width() / 2, field->height() / 2));
            QTest::mouseClick(v.window, Qt::LeftButton, {}, c.toPoint());
            QTest::keyClick(v.window, Qt::Key_A, Qt::ControlModifier);
            for (const QChar ch : QString::number(minimum / 1048576.0, 'f', 1))
                QTest::keyClick(v.window, ch.toLatin1());
            QTest::keyClick(v.window, Qt::Key_Return);
            typedWhileStreaming = v.controller->generating();
        });
        QVERIFY2(typedWhileStreaming, "the answer ended before the budget was typed");
        // Sampled from the engine's status while the answer ran and after (the monitor keeps
        // the latest): the budget in force and the allocation, at the last token.
        const TierStatus s = v.controller->tiers()->status();
        QVERIFY2(!text.isEmpty(), "no answer");
        QCOMPARE(text, reference); // placement never changes a token
        // The typed value was rounded to 0.1 MiB, then clamped to the minimum by the engine.
        QVERIFY2(s.residency.budgetBytes <= uint64_t(minimum) + 52429,
                 qPrintable(QString::number(s.residency.budgetBytes)));
        QVERIFY(s.residency.allocatedBytes <= s.residency.budgetBytes);

        // The screenshot: the RAM bar drew coloured segments.
        QTRY_VERIFY_WITH_TIMEOUT(tiers->allocatedBytes() > 0, 5000);
        QTest::qWait(100);
        const QImage shot = v.window->grabWindow();
        QDir().mkpath(QStringLiteral(COLI_BINARY_DIR "/screenshots"));
        QVERIFY(shot.save(QStringLiteral(COLI_BINARY_DIR "/screenshots/tiers.png")));
        auto* bar = v.find("ramBar");
        QVERIFY(bar);
        const QPointF tl = bar->mapToScene(QPointF(0, 0));
        const qreal dpr = v.window->devicePixelRatio();
        int coloured = 0;
        for (int x = 2; x < int(bar->width()) - 2; ++x) {
            const QColor c =
                shot.pixelColor(int((tl.x() + x) * dpr), int((tl.y() + bar->height() / 2) * dpr));
            if (c.saturation() > 60) ++coloured;
        }
        QVERIFY2(coloured > 0, "the RAM bar drew no segment");
    }

    void planFiguresBesideTheMeasuredOnes() {
        View v;
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        QVERIFY(loadModel(v));
        TierMonitor* tiers = v.controller->tiers();
        QTRY_VERIFY_WITH_TIMEOUT(tiers->available(), 5000);
        // At load the plan is there before any answer: its tok/s from the measured rates.
        QTRY_VERIFY_WITH_TIMEOUT(tiers->planTokensPerSecond() > 0, 10000);
        QCOMPARE(tiers->measuredTokensPerSecond(), -1.0);
        QVERIFY(!answer(v).isEmpty()); // the answer's routings are learned heat
        QTRY_VERIFY_WITH_TIMEOUT(tiers->measuredTokensPerSecond() > 0, 5000);
        // A budget between the working set and every expert: the hit rate comes from the heat.
        const double lo = tiers->minimumBudgetBytes(), hi = tiers->maximumBudgetBytes();
        tiers->setBudgetBytes(lo + (hi - lo) / 2);
        QTRY_COMPARE_WITH_TIMEOUT(tiers->planHitSource(), QStringLiteral("heat"), 5000);
        const double h = tiers->planHitRate();
        QVERIFY2(h > 0 && h < 1, qPrintable(QString::number(h)));
        QVERIFY(tiers->planTokensPerSecond() > 0);
        // Under the budget: the plan's figures beside the measured ones.
        const QString want = "hit rate " + QString::number(100 * h, 'f', 1) + " % (learned heat), ";
        QTRY_VERIFY_WITH_TIMEOUT(v.find("planLine")->property("text").toString().contains(want),
                                 5000);
        const QString line = v.find("planLine")->property("text").toString();
        QVERIFY2(line.startsWith("Plan at this budget: ") &&
                     line.contains(" tok/s\nMeasured: hit rate ") &&
                     line.endsWith(" tok/s last answer") && !line.contains("–"),
                 qPrintable(line));
        QDir().mkpath(QStringLiteral(COLI_BINARY_DIR "/screenshots"));
        for (const bool dark : {false, true}) {
            v.window->setProperty("dark", dark);
            QTest::qWait(200);
            const QImage shot = v.window->grabWindow();
            const QColor bg = shot.pixelColor(4, shot.height() - 4);
            QVERIFY2(dark ? bg.lightnessF() < 0.3 : bg.lightnessF() > 0.7, qPrintable(bg.name()));
            QVERIFY(shot.save(QStringLiteral(COLI_BINARY_DIR "/screenshots/tiers-plan-%1.png")
                                  .arg(dark ? "dark" : "light")));
        }
    }

    void settingsApplyToTheLoadedModelAtOnce() {
        QTemporaryDir config;
        qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
        View v;
        QVERIFY(v.window);
        AppSettings settings(QString{});
        connectSettings(&settings, v.controller.get(), 1);
        QVERIFY(loadModel(v));
        TierMonitor* tiers = v.controller->tiers();
        QTRY_VERIFY_WITH_TIMEOUT(tiers->available() && tiers->prefetch(), 5000);
        QVERIFY(tiers->budgetBytes() > tiers->minimumBudgetBytes());
        settings.setRamBudgetMiB(1); // below the working set: the smallest budget allowed
        settings.setPrefetch(false);
        QTRY_VERIFY_WITH_TIMEOUT(!tiers->prefetch(), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(tiers->budgetBytes(), tiers->minimumBudgetBytes(), 5000);
    }

    void prefetchSwitchReachesTheEngine() {
        View v;
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        QVERIFY(loadModel(v));
        TierMonitor* tiers = v.controller->tiers();
        QTRY_VERIFY_WITH_TIMEOUT(tiers->available() && tiers->prefetch(), 5000);
        auto* sw = v.find("prefetchSwitch");
        QVERIFY(sw);
        const QPointF c = sw->mapToScene(QPointF(sw->width() / 2, sw->height() / 2));
        QTest::mouseClick(v.window, Qt::LeftButton, {}, c.toPoint());
        QTRY_VERIFY_WITH_TIMEOUT(!tiers->prefetch(), 5000);
        QVERIFY(!v.controller->tiers()->status().prefetch);
    }
};

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    TestTiersView t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_tiers_view.moc"
