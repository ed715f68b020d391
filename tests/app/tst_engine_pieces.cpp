// Token pieces from the engine thread to the ChatModel (EngineController): at most one ChatModel
// update per frame tick, and no piece lost or reordered when the GUI thread is slow. The recorded
// 2,000-token answer is replayed with no delays (EngineWorker's replay mode: the real ring,
// wake-ups and Finished event) through a small ring while every ChatModel update sleeps, so
// the ring fills and the engine thread has to wait for room (backpressure).
#include "engine_controller.h"
#include "token_replay.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

using namespace coli;
using namespace coli::app;

namespace {
const QString kRecording = QStringLiteral(COLI_SOURCE_DIR "/tests/app/data/markdown_answer.replay");
const QString kShippedModel = QStringLiteral(COLI_SHIPPED_MODEL_DIR);
} // namespace

class TstEnginePieces : public QObject {
    Q_OBJECT
private slots:
    void slowConsumerGetsEveryPieceOnceBatched();
    void stopDuringReplayKeepsTheText();
};

void TstEnginePieces::slowConsumerGetsEveryPieceOnceBatched() {
    auto rec = readTokenReplay(kRecording.toStdString());
    QVERIFY2(rec.isOk(), rec.status().message().c_str());
    QString expected;
    for (const ReplayPiece& p : rec.value())
        expected += QString::fromStdString(p.text);

    WorkerOptions wo;
    wo.threads = 1;
    wo.ringCapacity = 8;
    wo.replayFile = kRecording.toStdString();
    wo.replaySpeed = 0; // as fast as the ring lets it
    EngineController c(wo);
    GenerateParams params;
    params.maxNewTokens = 100000;
    c.setGenerateParams(params, {});
    c.loadModel(kShippedModel); // send() needs a ready model; the replay does not run it
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 30000);

    // The order of events as the GUI thread sees them: 'T' a text update of the ChatModel,
    // 'F' the end of a frame tick's flush. A slow consumer: each text update takes 5 ms.
    QString order;
    int flushedPieces = 0;
    ChatModel& chat = *c.chatModel();
    connect(&chat, &QAbstractItemModel::dataChanged, this,
            [&](const QModelIndex&, const QModelIndex&, const QList<int>& roles) {
                if (!roles.contains(ChatModel::TextRole)) return;
                order += 'T';
                QThread::msleep(5);
            });
    QElapsedTimer clock;
    clock.start();
    std::vector<qint64> flushTimes;
    connect(&c, &EngineController::piecesFlushed, this, [&](int n) {
        order += 'F';
        flushedPieces += n;
        flushTimes.push_back(clock.nsecsElapsed());
    });
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(QStringLiteral("Summarise my CSV file.")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);

    const ChatModel::Message answer = chat.at(1);
    QVERIFY2(answer.error.isEmpty(), qPrintable(answer.error));
    QCOMPARE(answer.text, expected); // every piece, in order
    QCOMPARE(answer.tokens, int(rec.value().size()));
    QCOMPARE(flushedPieces, int(rec.value().size()));
    QCOMPARE(answer.stopReason, QStringLiteral("eos"));
    // One text update per tick, and none outside a tick.
    const int ticks = int(order.count('F'));
    QCOMPARE(order, QStringLiteral("TF").repeated(ticks));
    // A tick is one frame: the flush timer (a precise timer, which never fires early) starts at
    // the first piece after a flush, so two flushes are at least one interval apart; only the
    // last one, at Finished, comes at once. (A lower bound on the gaps: a slow machine can only
    // make them longer, so this cannot fail by slowness.)
    QVERIFY(flushTimes.size() >= 2);
    for (size_t i = 1; i + 1 < flushTimes.size(); ++i)
        QVERIFY2(flushTimes[i] - flushTimes[i - 1] >=
                     EngineController::kFlushIntervalMs * 1000000LL,
                 qPrintable(QStringLiteral("flushes %1 and %2 only %3 ms apart")
                                .arg(i - 1)
                                .arg(i)
                                .arg((flushTimes[i] - flushTimes[i - 1]) / 1e6)));
    // Batched: far fewer updates than pieces (each tick took what arrived meanwhile).
    QVERIFY2(ticks * 4 < int(rec.value().size()), qPrintable(QString::number(ticks)));
    qInfo("%d pieces in %d ticks", int(rec.value().size()), ticks);
    // The answer's blocks got the same text.
    auto* blocks = chat.at(1).blocks;
    QVERIFY(blocks);
    QCOMPARE(QString::fromStdString(blocks->stream().text()), expected);
    QCOMPARE(blocks->finalCount(), blocks->rowCount());
}

// Stop in the middle of a replay at recorded speed: the text so far stays, the answer is
// "cancelled", and the pieces shown are a prefix of the recording.
void TstEnginePieces::stopDuringReplayKeepsTheText() {
    auto rec = readTokenReplay(kRecording.toStdString());
    QVERIFY2(rec.isOk(), rec.status().message().c_str());
    QString expected;
    for (const ReplayPiece& p : rec.value())
        expected += QString::fromStdString(p.text);
    WorkerOptions wo;
    wo.threads = 1;
    wo.replayFile = kRecording.toStdString();
    wo.replaySpeed = 1;
    EngineController c(wo);
    c.loadModel(kShippedModel);
    QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 30000);
    QSignalSpy finished(&c, &EngineController::answerFinished);
    QVERIFY(c.send(QStringLiteral("Summarise my CSV file.")));
    QTRY_VERIFY_WITH_TIMEOUT(c.chatModel()->at(1).text.size() > 100, 30000);
    c.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    const ChatModel::Message answer = c.chatModel()->at(1);
    QCOMPARE(answer.stopReason, QStringLiteral("cancelled"));
    QVERIFY(answer.text.size() < expected.size());
    QVERIFY(expected.startsWith(answer.text));
}

QTEST_GUILESS_MAIN(TstEnginePieces)
#include "tst_engine_pieces.moc"
