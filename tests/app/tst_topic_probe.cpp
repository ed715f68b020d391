// The topic probe in the app (issue 12): EngineController::runTopicProbe runs on the engine
// thread with progress events while the GUI thread goes on; cancelTopicProbe stops it and nothing
// is stored; an answer sent meanwhile waits for it (answerWaiting, probeStatus) and runs after;
// a finished run is saved through the storage thread (AtlasProbeGlue) and is the newest probe
// data handed to the controller at the next load. On the shipped default model.
#include "atlas_probe_glue.h"
#include "session_manager.h"

#include "storage/atlas_store.h"
#include "storage/model_identity.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_SHIPPED_MODEL_DIR);
const QString kSmallTopics = QStringLiteral(COLI_SOURCE_DIR "/tests/cli/data/atlas-topics.json");
const QString kFullTopics = QStringLiteral(COLI_SOURCE_DIR "/resources/topics/default-model.json");

struct Rig {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<SessionManager> sessions;
    std::unique_ptr<AtlasProbeGlue> glue;

    explicit Rig(const QString& db) {
        controller = std::make_unique<EngineController>(WorkerOptions{.threads = 1});
        GenerateParams p;
        p.maxNewTokens = 8;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
        sessions = std::make_unique<SessionManager>(controller.get(),
                                                    StorageWorkerOptions{.path = db.toStdString()});
        // A folder with no installed data: the source tree's topic sets are used.
        glue = std::make_unique<AtlasProbeGlue>(controller.get(), sessions->worker(),
                                                QStringLiteral(COLI_BINARY_DIR));
    }
    ~Rig() {
        sessions->shutdown();
        controller->shutdown();
        glue.reset();
        sessions.reset();
    }
    bool load() {
        QSignalSpy looked(glue.get(), &AtlasProbeGlue::loaded);
        controller->loadModel(kModel);
        return QTest::qWaitFor([&] { return controller->loadState() != "loading"; }, 60000) &&
               controller->loadState() == "ready" && (looked.count() > 0 || looked.wait(30000));
    }
    void small() {
        controller->setProbeTopicsFile(kSmallTopics);
        probe::ProbeOptions o;
        o.minPrompts = 0;
        o.minTokens = 0;
        controller->setProbeOptions(o);
    }
    bool waitProbeEnd(int ms = 120000) {
        return QTest::qWaitFor([&] { return !controller->probeRunning(); }, ms);
    }
};

int64_t storedProbes(const QString& db) {
    auto s = storage::Storage::open(db.toStdString());
    if (!s) return -1;
    auto id = storage::modelIdentity(kModel.toStdString(), s->get());
    auto model = (*s)->findModel(*id);
    if (!model || !*model) return 0;
    return storage::AtlasStore(**s).probeCount(**model).value();
}
} // namespace

class TestTopicProbe : public QObject {
    Q_OBJECT
private slots:
    void refusedWithoutAModel() {
        QTemporaryDir tmp;
        Rig rig(tmp.filePath("c.db"));
        rig.controller->runTopicProbe();
        QCOMPARE(rig.controller->probeState(), QStringLiteral("idle"));
        QVERIFY(rig.controller->errorText().contains("needs a loaded model"));
    }

    void runsOnTheEngineThreadWithProgressAndIsStored() {
        QTemporaryDir tmp;
        const QString db = tmp.filePath("c.db");
        std::shared_ptr<const storage::AtlasProbe> first;
        {
            Rig rig(db);
            QVERIFY(rig.load());
            // The shipped model's own set is chosen by default; no probe is stored yet.
            QVERIFY(rig.controller->probeTopicsFile().endsWith("default-model.json"));
            QVERIFY(!rig.controller->hasAtlasProbe());
            rig.small();
            QStringList states;
            qint64 lastDone = -1;
            bool monotonic = true;
            connect(rig.controller.get(), &EngineController::probeChanged, this, [&] {
                const QString st = rig.controller->probeState();
                if (states.isEmpty() || states.last() != st) states << st;
                monotonic = monotonic && rig.controller->probeTokensDone() >= lastDone;
                lastDone = rig.controller->probeTokensDone();
            });
            // The GUI thread keeps running while the engine thread probes.
            int ticks = 0;
            QTimer tick;
            connect(&tick, &QTimer::timeout, this, [&] { ++ticks; });
            tick.start(1);
            QSignalSpy saved(rig.glue.get(), &AtlasProbeGlue::saved);
            rig.controller->runTopicProbe();
            QVERIFY(rig.controller->probeRunning());
            QVERIFY(rig.waitProbeEnd());
            tick.stop();
            QCOMPARE(rig.controller->probeState(), QStringLiteral("done"));
            QCOMPARE(states.first(), QStringLiteral("running"));
            QCOMPARE(states.last(), QStringLiteral("done"));
            QVERIFY(monotonic);
            QVERIFY(rig.controller->probeTokensTotal() > 0);
            QCOMPARE(rig.controller->probeTokensDone(), rig.controller->probeTokensTotal());
            QVERIFY(ticks > 0);
            QVERIFY(rig.controller->probeStatus().startsWith("Topic probe done"));
            const QVariantMap fig = rig.controller->probeFigures();
            QCOMPARE(fig.value("topics").toList().size(), 3);
            // The Atlas data: one position per expert of the 6 x 16 model.
            QVERIFY(rig.controller->hasAtlasProbe());
            QCOMPARE(rig.controller->atlasProbe()->positions.size(), size_t(96));
            QVERIFY(saved.count() > 0 || saved.wait(10000));
            QVERIFY(saved.first().first().toLongLong() > 0);
            first = rig.controller->atlasProbe();
            QCOMPARE(first->id, saved.first().first().toLongLong());
            QVERIFY(first->createdMs > 0);
        }
        QCOMPARE(storedProbes(db), int64_t(1));
        // Next start: the newest stored probe of the model is handed over at load.
        Rig again(db);
        QVERIFY(again.load());
        QVERIFY(again.controller->hasAtlasProbe());
        const auto& p = *again.controller->atlasProbe();
        QCOMPARE(p.id, first->id);
        QCOMPARE(p.createdMs, first->createdMs);
        QCOMPARE(p.positions.size(), first->positions.size());
        QCOMPARE(p.positions[5].x, first->positions[5].x);
        QCOMPARE(p.counts.size(), first->counts.size());
        QCOMPARE(p.topics.size(), size_t(3));
    }

    void cancelStopsItAndNothingIsStored() {
        QTemporaryDir tmp;
        const QString db = tmp.filePath("c.db");
        Rig rig(db);
        QVERIFY(rig.load());
        rig.controller->setProbeTopicsFile(kFullTopics); // 28,000 tokens: long enough to stop
        rig.controller->runTopicProbe();
        QVERIFY(QTest::qWaitFor([&] { return rig.controller->probeTokensDone() > 0; }, 60000));
        rig.controller->cancelTopicProbe();
        QVERIFY(rig.waitProbeEnd(30000));
        QCOMPARE(rig.controller->probeState(), QStringLiteral("cancelled"));
        QVERIFY(rig.controller->probeTokensDone() < rig.controller->probeTokensTotal());
        QVERIFY(!rig.controller->hasAtlasProbe());
        QVERIFY(rig.controller->errorText().isEmpty()); // a stop is not an error
        QVERIFY(QTest::qWaitFor([&] { return rig.sessions->worker()->pending() == 0; }, 10000));
        QCOMPARE(storedProbes(db), int64_t(0));
    }

    void anAnswerWaitsForTheProbeAndRunsAfter() {
        QTemporaryDir tmp;
        Rig rig(tmp.filePath("c.db"));
        QVERIFY(rig.load());
        rig.controller->setProbeTopicsFile(kFullTopics);
        rig.controller->runTopicProbe();
        QVERIFY(QTest::qWaitFor([&] { return rig.controller->probeTokensDone() > 0; }, 60000));
        // A second probe while one runs is not started.
        const qint64 total = rig.controller->probeTokensTotal();
        rig.controller->runTopicProbe();
        QCOMPARE(rig.controller->probeTokensTotal(), total);
        bool pieceDuringProbe = false;
        connect(rig.controller.get(), &EngineController::piecesFlushed, this,
                [&] { pieceDuringProbe = pieceDuringProbe || rig.controller->probeRunning(); });
        QSignalSpy finished(rig.controller.get(), &EngineController::answerFinished);
        QVERIFY(rig.controller->send(QStringLiteral("Define lantern.")));
        QVERIFY(rig.controller->answerWaiting());
        QVERIFY(rig.controller->probeStatus().startsWith("Topic probe: "));
        QTest::qWait(300);
        QVERIFY(rig.controller->probeRunning()); // the answer did not stop it
        QCOMPARE(finished.count(), 0);
        rig.controller->cancelTopicProbe(); // only the probe: the answer then runs
        QVERIFY(finished.wait(60000));
        QVERIFY(!rig.controller->answerWaiting());
        QCOMPARE(rig.controller->probeState(), QStringLiteral("cancelled"));
        QVERIFY(!pieceDuringProbe);
        const int row = finished.first().first().toInt();
        QVERIFY(!rig.controller->chatModel()->at(row).text.isEmpty());
    }

    void anAnswerRunningFirstQueuesTheProbe() {
        QTemporaryDir tmp;
        Rig rig(tmp.filePath("c.db"));
        QVERIFY(rig.load());
        rig.small();
        QSignalSpy finished(rig.controller.get(), &EngineController::answerFinished);
        QVERIFY(rig.controller->send(QStringLiteral("Define lantern.")));
        rig.controller->runTopicProbe();
        QCOMPARE(rig.controller->probeState(), QStringLiteral("queued"));
        QVERIFY(rig.controller->probeStatus().contains("waiting for the answer"));
        QVERIFY(finished.wait(60000));
        QVERIFY(rig.waitProbeEnd());
        QCOMPARE(rig.controller->probeState(), QStringLiteral("done"));
    }
};

QTEST_GUILESS_MAIN(TestTopicProbe)
#include "tst_topic_probe.moc"
