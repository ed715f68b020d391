// The Charts view's data: TurnStatsModel's rows from runs (definitions of docs/app.md "Charts"),
// the live tok/s samples (LiveRateModel), both under QAbstractItemModelTester; then the model
// following the real SessionManager and EngineController on the fixture model: one row per
// answer as it ends, the same rows read back from the database when the session is reopened
// after a restart, none after New chat.
#include "session_manager.h"
#include "turn_stats_model.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

storage::RunRecord sampleRun() {
    storage::RunRecord r;
    r.generatedTokens = 40;
    r.tokensPerSecond = 12.5;
    r.ttftSeconds = 0.75;
    r.split = {.attentionS = 1.0,
               .expertFfnS = 2.0,
               .expertWaitS = 0.5,
               .samplingS = 0.25,
               .otherS = 0.25};
    r.tiers.routed = 1000;
    r.tiers.hitsPinned = 300;
    r.tiers.hitsCache = 500; // of which 100 still being read
    r.tiers.inFlightHits = 100;
    r.tiers.misses = 200;
    r.tiers.bytesRead = 50ull * 1024 * 1024;
    r.tiers.tokens = 20;
    return r;
}

QVariant roleValue(const QAbstractItemModel& m, int row, const char* name) {
    const int role = m.roleNames().key(name, -1);
    return role < 0 ? QVariant() : m.data(m.index(row, 0), role);
}

bool sameTurn(const TurnStatsModel::Turn& a, const TurnStatsModel::Turn& b) {
    return a.turn == b.turn && a.tokens == b.tokens && a.tokensPerSecond == b.tokensPerSecond &&
           a.ttft == b.ttft && a.tiered == b.tiered && a.hitVram == b.hitVram &&
           a.hitPinned == b.hitPinned && a.hitCache == b.hitCache &&
           a.hitInFlight == b.hitInFlight && a.hitDisk == b.hitDisk &&
           a.mibPerToken == b.mibPerToken && a.attention == b.attention &&
           a.expertFfn == b.expertFfn && a.expertWait == b.expertWait && a.sampling == b.sampling &&
           a.other == b.other;
}

// The real controller and storage thread, as tst_session_manager runs them.
struct Rig {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<SessionManager> sessions;
    std::unique_ptr<TurnStatsModel> stats;
    std::unique_ptr<QAbstractItemModelTester> tester, liveTester;

    explicit Rig(const QString& db) {
        controller = std::make_unique<EngineController>(WorkerOptions{.threads = 1});
        GenerateParams p;
        p.maxNewTokens = 12;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
        sessions = std::make_unique<SessionManager>(controller.get(),
                                                    StorageWorkerOptions{.path = db.toStdString()});
        stats = std::make_unique<TurnStatsModel>(sessions.get(), controller.get());
        tester = std::make_unique<QAbstractItemModelTester>(
            stats.get(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        liveTester = std::make_unique<QAbstractItemModelTester>(
            stats->live(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        controller->loadModel(kModel);
    }
    ~Rig() {
        sessions->shutdown();
        controller->shutdown();
        tester.reset();
        liveTester.reset();
        stats.reset();
        sessions.reset();
    }
    bool ready() {
        return QTest::qWaitFor([&] { return controller->loadState() != "loading"; }, 60000) &&
               controller->loadState() == "ready";
    }
    bool ask(const QString& text) {
        QSignalSpy done(controller.get(), &EngineController::answerFinished);
        return controller->send(text) && done.wait(60000);
    }
    bool settle() {
        return QTest::qWaitFor([&] { return sessions->worker()->pending() == 0; }, 10000) &&
               (QTest::qWait(50), true);
    }
};
} // namespace

class TestTurnStatsModel : public QObject {
    Q_OBJECT
private slots:
    void aRowFollowsTheDefinitions() {
        TurnStatsModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setRuns({sampleRun()});
        QCOMPARE(m.rowCount(), 1);
        QCOMPARE(roleValue(m, 0, "turn").toInt(), 1);
        QCOMPARE(roleValue(m, 0, "tokens").toLongLong(), 40);
        QCOMPARE(roleValue(m, 0, "tokensPerSecond").toDouble(), 12.5);
        QCOMPARE(roleValue(m, 0, "ttft").toDouble(), 0.75);
        QVERIFY(roleValue(m, 0, "tiered").toBool());
        QCOMPARE(roleValue(m, 0, "hitPinned").toDouble(), 0.3);
        QCOMPARE(roleValue(m, 0, "hitCache").toDouble(), 0.4); // in flight is not ready
        QCOMPARE(roleValue(m, 0, "hitInFlight").toDouble(), 0.1);
        QCOMPARE(roleValue(m, 0, "hitDisk").toDouble(), 0.2);
        QCOMPARE(roleValue(m, 0, "hitRate").toDouble(), sampleRun().expertHitRate());
        QCOMPARE(roleValue(m, 0, "mibPerToken").toDouble(), 2.5);
        QCOMPARE(roleValue(m, 0, "attentionShare").toDouble(), 0.25);
        QCOMPARE(roleValue(m, 0, "expertFfnShare").toDouble(), 0.5);
        QCOMPARE(roleValue(m, 0, "expertWaitShare").toDouble(), 0.125);
        QCOMPARE(roleValue(m, 0, "samplingShare").toDouble(), 0.0625);
        QCOMPARE(roleValue(m, 0, "otherShare").toDouble(), 0.0625);
        QCOMPARE(m.get(0).value("hitDisk").toDouble(), 0.2);
        QVERIFY(m.get(1).isEmpty());
        QCOMPARE(m.column("ttft"), QVariantList{0.75});
        QVERIFY(m.column("no such role").isEmpty());
    }

    // A run with a GPU tier (schema version 6 keeps its VRAM hits): VRAM is a place of its own,
    // the five shares add up to 1 and VRAM hits count as ready (tiers::hitRate).
    void vramHitsAreTheirOwnPlaceAndCountAsReady() {
        storage::RunRecord r = sampleRun();
        r.tiers.hitsPinned = 100;
        r.tiers.hitsVram = 200; // 1000 = 200 VRAM + 100 pinned + 500 cache + 200 disk
        TurnStatsModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setRuns({sampleRun()});
        QVERIFY(!m.vram());
        QCOMPARE(roleValue(m, 0, "hitVram").toDouble(), 0.0);
        QSignalSpy count(&m, &TurnStatsModel::countChanged);
        m.appendRun(r);
        QCOMPARE(count.count(), 1);
        QVERIFY(m.vram());
        QCOMPARE(roleValue(m, 1, "hitVram").toDouble(), 0.2);
        QCOMPARE(roleValue(m, 1, "hitPinned").toDouble(), 0.1);
        const TurnStatsModel::Turn& t = m.at(1);
        QVERIFY(std::abs(t.hitVram + t.hitPinned + t.hitCache + t.hitInFlight + t.hitDisk - 1) <
                1e-12);
        QVERIFY(std::abs(roleValue(m, 1, "hitRate").toDouble() - 0.7) < 1e-12);
        QCOMPARE(roleValue(m, 1, "hitRate").toDouble(), r.expertHitRate());
        QCOMPARE(m.column("hitVram"), (QVariantList{0.0, 0.2}));
        m.setRuns({sampleRun()}); // a chat without GPU answers
        QVERIFY(!m.vram());
        m.setRuns({r});
        QVERIFY(m.vram());
        m.clear();
        QVERIFY(!m.vram());
    }

    void residentExpertsAndNoTimeGiveZeroShares() {
        storage::RunRecord r; // nothing routed, nothing timed
        r.tokensPerSecond = 3;
        const TurnStatsModel::Turn t = TurnStatsModel::turnOf(r, 7);
        QCOMPARE(t.turn, 7);
        QVERIFY(!t.tiered);
        QCOMPARE(t.hitPinned + t.hitCache + t.hitInFlight + t.hitDisk, 0.0);
        QCOMPARE(t.mibPerToken, 0.0);
        QCOMPARE(t.attention + t.expertFfn + t.expertWait + t.sampling + t.other, 0.0);
        TurnStatsModel m;
        m.setRuns({r});
        QVERIFY(!m.tiered());
    }

    void rowsAppendResetAndClearUnderTheTester() {
        TurnStatsModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy count(&m, &TurnStatsModel::countChanged);
        storage::RunRecord a = sampleRun(), b = sampleRun();
        b.tokensPerSecond = 30;
        b.ttftSeconds = 0.2;
        b.tiers.bytesRead *= 4;
        m.appendRun(a);
        m.appendRun(b);
        QCOMPARE(m.rowCount(), 2);
        QCOMPARE(m.at(1).turn, 2);
        QCOMPARE(m.maxTokensPerSecond(), 30.0);
        QCOMPARE(m.maxTtft(), 0.75);
        QCOMPARE(m.maxMibPerToken(), 10.0);
        QVERIFY(m.tiered());
        QCOMPARE(count.count(), 2);
        m.setRuns({b});
        QCOMPARE(m.rowCount(), 1);
        QCOMPARE(m.at(0).turn, 1);
        QCOMPARE(m.maxTtft(), 0.2);
        m.clear();
        QCOMPARE(m.rowCount(), 0);
        QCOMPARE(m.maxTokensPerSecond(), 0.0);
        QVERIFY(!m.tiered());
    }

    void liveSamplesOfTheAnswerBeingWritten() {
        LiveRateModel live;
        QAbstractItemModelTester tester(&live,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        live.add(0.1, 5); // not streaming: ignored
        QCOMPARE(live.rowCount(), 0);
        live.start();
        QVERIFY(live.streaming());
        live.add(0.1, 5);
        live.add(0.2, 0);            // no rate yet: ignored
        live.add(0.05, 6);           // back in time: ignored
        live.add(0.3, std::nan("")); // ignored
        live.add(0.4, 8);
        QCOMPARE(live.rowCount(), 2);
        QCOMPARE(live.maxSeconds(), 0.4);
        QCOMPARE(live.maxTokensPerSecond(), 8.0);
        QCOMPARE(live.latest(), 8.0);
        QCOMPARE(roleValue(live, 1, "seconds").toDouble(), 0.4);
        QCOMPARE(live.points().at(0).toMap().value("y").toDouble(), 5.0);
        QCOMPARE(live.sample(1), QPointF(0.4, 8));
        QCOMPARE(live.sample(2), QPointF());
        live.stop(); // the curve stays after the answer
        QVERIFY(!live.streaming());
        QCOMPARE(live.rowCount(), 2);
        live.start(); // the next answer starts afresh
        QCOMPARE(live.rowCount(), 0);
        // A long answer keeps its whole curve at a coarser step.
        for (int i = 0; i <= LiveRateModel::kMaxSamples; ++i)
            live.add(i * 0.01, 1 + i);
        QVERIFY(live.rowCount() <= LiveRateModel::kMaxSamples);
        QVERIFY(live.rowCount() > LiveRateModel::kMaxSamples / 2);
        QCOMPARE(roleValue(live, 0, "seconds").toDouble(), 0.0);
        QCOMPARE(live.latest(), double(LiveRateModel::kMaxSamples + 1));
        live.clear();
        QCOMPARE(live.rowCount(), 0);
        QVERIFY(!live.streaming());
    }

    void followsTheSessionAcrossARestart() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        QVector<TurnStatsModel::Turn> before;
        {
            Rig r(db);
            QVERIFY(r.ready());
            QSignalSpy added(r.sessions.get(), &SessionManager::runAdded);
            const QStringList questions{"What is the sea like?", "And the ships?", "Why?"};
            for (int i = 0; i < questions.size(); ++i) {
                QVERIFY(r.ask(questions[i]));
                QCOMPARE(r.stats->rowCount(), i + 1); // appended when the answer ends
                const ChatModel::Message& answer = r.controller->chatModel()->at(2 * i + 1);
                const TurnStatsModel::Turn& t = r.stats->at(i);
                QCOMPARE(t.turn, i + 1);
                QCOMPARE(t.tokens, qint64(answer.tokens));
                QCOMPARE(t.tokensPerSecond, answer.tokensPerSecond);
                QCOMPARE(t.ttft, answer.ttft);
                QVERIFY(t.tokensPerSecond > 0 && t.ttft > 0);
                // The fixture streams its experts: every routed expert came from some place.
                QVERIFY(t.tiered);
                QVERIFY(std::abs(t.hitVram + t.hitPinned + t.hitCache + t.hitInFlight + t.hitDisk -
                                 1) < 1e-9);
                QCOMPARE(t.hitVram, 0.0); // no GPU tier here
                QVERIFY(std::abs(t.attention + t.expertFfn + t.expertWait + t.sampling + t.other -
                                 1) < 0.02);
            }
            QCOMPARE(added.count(), 3);
            QVERIFY(r.settle());
            for (int i = 0; i < r.stats->rowCount(); ++i)
                before.append(r.stats->at(i));
            // New chat: no turns shown.
            r.sessions->newSession();
            QCOMPARE(r.stats->rowCount(), 0);
            QVERIFY(r.settle());
        }
        // Restart: the last session shown was the new, empty chat; reopen the first one. Its
        // rows come from the database and equal what was shown while it was written.
        Rig r(db);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->sessions()->rowCount() == 1, 10000);
        QSignalSpy loaded(r.sessions.get(), &SessionManager::runsLoaded);
        r.sessions->openSession(r.sessions->sessions()->at(0).id);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(r.stats->rowCount(), before.size());
        for (int i = 0; i < before.size(); ++i)
            QVERIFY2(sameTurn(r.stats->at(i), before[i]), qPrintable(QString::number(i)));
        // The conversation goes on: the next answer is turn 4.
        QVERIFY(r.ask("Tell me more"));
        QCOMPARE(r.stats->rowCount(), 4);
        QCOMPARE(r.stats->at(3).turn, 4);
    }

    void liveSamplesWhileAnAnswerStreams() {
        QTemporaryDir dir;
        Rig r(dir.filePath("colibri.db"));
        QVERIFY(r.ready());
        GenerateParams p = r.controller->generateParams();
        p.maxNewTokens = 400;
        p.ignoreEos = true;
        r.controller->setGenerateParams(p, r.controller->sampling());
        LiveRateModel* live = r.stats->live();
        QSignalSpy done(r.controller.get(), &EngineController::answerFinished);
        QVERIFY(r.controller->send("Write a long story"));
        QVERIFY(live->streaming());
        QVERIFY(done.wait(60000));
        QVERIFY(!live->streaming());
        // Sampled at ~30 Hz from the telemetry: a 400-token answer gives a few samples.
        QVERIFY2(live->rowCount() >= 2, qPrintable(QString::number(live->rowCount())));
        QVERIFY(live->maxTokensPerSecond() > 0);
        // New chat drops them.
        r.sessions->newSession();
        QCOMPARE(live->rowCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestTurnStatsModel)
#include "tst_turn_stats_model.moc"
