// TierMonitor and TierRowsModel (the Tiers view's data) fed with synthetic TierStatus values:
// QAbstractItemModelTester on the rows, the figures' definitions (tier_monitor.h), session
// restarts, one dataChanged per update, and the budget control's clamping.
#include "tier_monitor.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using namespace coli::app;

namespace {

TierStatus base() {
    TierStatus s;
    s.serial = 1;
    s.streaming = true;
    s.residency.totalExperts = 64;
    s.residency.slotBytes = 1000;
    s.residency.budgetBytes = 20000;
    s.minimumBudget = 6000;
    s.maximumBudget = 70000;
    s.pinCapacity = 7;
    s.expertReadBytes = 400;
    s.backend = "io_uring";
    s.prefetch = true;
    return s;
}

int rowOf(const TierRowsModel& m, const QString& key) {
    for (int i = 0; i < m.rowCount(); ++i)
        if (m.at(i).key == key) return i;
    return -1;
}

} // namespace

class TestTierMonitor : public QObject {
    Q_OBJECT
private slots:
    void rowsAreFixedAndPassTheModelTester() {
        TierMonitor mon;
        QAbstractItemModelTester tester(mon.rows(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(mon.rows()->rowCount(), 6);
        QVERIFY(!mon.rows()->at(rowOf(*mon.rows(), "vram")).available);
        QSignalSpy reset(mon.rows(), &QAbstractItemModel::modelReset);
        QSignalSpy changed(mon.rows(), &QAbstractItemModel::dataChanged);
        TierStatus s = base();
        for (int i = 0; i < 20; ++i) {
            s.serial += 1;
            s.residency.cachedExperts = i;
            s.residency.cacheBytes = uint64_t(i) * 1000;
            s.residency.allocatedBytes = s.residency.cacheBytes;
            s.residency.diskExperts = 64 - i;
            mon.apply(s);
        }
        QCOMPARE(reset.count(), 0);    // values change in place: delegates stay
        QCOMPARE(changed.count(), 20); // one batch per update, never one signal per row
        const QHash<int, QByteArray> roles = mon.rows()->roleNames();
        QVERIFY(roles.values().contains("hitSession"));
        QVERIFY(roles.values().contains("share"));
    }

    void aRepeatedSerialChangesNothing() {
        TierMonitor mon;
        QSignalSpy changed(&mon, &TierMonitor::changed);
        mon.apply(base());
        mon.apply(base());
        QCOMPARE(changed.count(), 1);
    }

    void figuresFollowTheirDefinitions() {
        TierMonitor mon;
        TierStatus s = base();
        mon.apply(s); // session starts here (counters 0)
        s.serial = 2;
        // 100 routed: 30 pinned, 40 cache of which 10 still in flight, 30 misses.
        s.counters.routed = 100;
        s.counters.hitsPinned = 30;
        s.counters.hitsCache = 40;
        s.counters.inFlightHits = 10;
        s.counters.misses = 30;
        s.counters.bytesRead = 10 * 1024 * 1024;
        s.counters.tokens = 5;
        s.counters.lookaheadRouted = 50;
        s.counters.lookaheadRecalled = 20;
        s.counters.prefetchPredicted = 40;
        s.counters.prefetchCorrect = 30;
        s.counters.ioWaitSeconds = 0.5;
        s.busySeconds = 2.0;
        // The last step: 10 routed, 8 found ready, 2 read; one token; 1 MiB read.
        s.last.routed = 10;
        s.last.hitsPinned = 5;
        s.last.hitsCache = 3;
        s.last.misses = 2;
        s.last.bytesRead = 1024 * 1024;
        s.last.tokens = 1;
        // Of the 5 tokens, 3 were decode steps that read 9 MiB (the last one of them the step
        // above); the prompt's 2 tokens read 1 MiB in one chunk.
        s.decodeCounters.bytesRead = 9 * 1024 * 1024;
        s.decodeCounters.tokens = 3;
        s.lastDecode = s.last;
        s.residency.pinnedExperts = 3;
        s.residency.pinnedBytes = 3000;
        s.residency.cachedExperts = 5;
        s.residency.loadingExperts = 1;
        s.residency.cacheBytes = 6000; // loading slots count as cache bytes
        s.residency.allocatedBytes = 9000;
        s.residency.diskExperts = 55;
        mon.apply(s);
        QCOMPARE(mon.hitRateSession(), 0.6); // (30 + 40 - 10) / 100
        QCOMPARE(mon.hitRateLast(), 0.8);
        QCOMPARE(mon.prefetchRecall(), 0.4);
        QCOMPARE(mon.prefetchPrecision(), 0.75);
        QCOMPARE(mon.mibPerTokenSession(), 3.0);       // decode: 9 MiB / 3 tokens
        QCOMPARE(mon.mibPerPromptTokenSession(), 0.5); // prompt: 1 MiB / 2 tokens
        QCOMPARE(mon.mibPerTokenLast(), 1.0);
        QCOMPARE(mon.ioWaitShare(), 0.25);
        const TierRowsModel& rows = *mon.rows();
        const TierRow& pinned = rows.at(rowOf(rows, "pinned"));
        const TierRow& cache = rows.at(rowOf(rows, "cache"));
        const TierRow& loading = rows.at(rowOf(rows, "loading"));
        const TierRow& free = rows.at(rowOf(rows, "free"));
        const TierRow& disk = rows.at(rowOf(rows, "disk"));
        QCOMPARE(pinned.capacity, 7);
        QCOMPARE(pinned.hitSession, 0.3);
        QCOMPARE(cache.hitSession, 0.3); // 40 - 10 in flight
        QCOMPARE(loading.hitSession, 0.1);
        QCOMPARE(disk.hitSession, 0.3);
        QCOMPARE(pinned.hitSession + cache.hitSession + loading.hitSession + disk.hitSession, 1.0);
        QCOMPARE(cache.bytes, 5000.0); // 6000 minus the one loading slot
        QCOMPARE(loading.bytes, 1000.0);
        QCOMPARE(free.bytes, 11000.0); // budget 20000 - allocated 9000
        QCOMPARE(free.experts, 11);
        // The RAM bar's segments fill the budget.
        QCOMPARE(pinned.share + cache.share + loading.share + free.share, 1.0);
        QCOMPARE(disk.bytes, 55 * 400.0);
        QCOMPARE(free.hitSession, -1.0);
    }

    // The GPU tier (residency.vramCapacity > 0): the VRAM row comes alive with its own budget,
    // VRAM hits count in the hit rate, and the five places' shares add up to 1.
    void vramRowFollowsTheGpuTier() {
        TierMonitor mon;
        TierStatus s = base();
        mon.apply(s);
        const TierRowsModel& rows = *mon.rows();
        const int vramRow = rowOf(rows, "vram");
        QVERIFY(!rows.at(vramRow).available); // no GPU tier: as before
        QVERIFY(!mon.vramAvailable());
        QSignalSpy changed(mon.rows(), &QAbstractItemModel::dataChanged);
        s.serial = 2;
        s.residency.vramCapacity = 16;
        s.residency.vramExperts = 4;
        s.residency.vramBudgetBytes = 16 * 900;
        s.residency.vramBytes = 4 * 900;
        // 100 routed: 25 in VRAM, 20 pinned, 30 cache (5 in flight), 25 misses.
        s.counters.routed = 100;
        s.counters.hitsVram = 25;
        s.counters.hitsPinned = 20;
        s.counters.hitsCache = 30;
        s.counters.inFlightHits = 5;
        s.counters.misses = 25;
        s.counters.tokens = 2;
        s.last.routed = 10;
        s.last.hitsVram = 4;
        s.last.hitsPinned = 2;
        s.last.hitsCache = 1;
        s.last.misses = 3;
        s.last.tokens = 1;
        mon.apply(s);
        QVERIFY(mon.vramAvailable());
        QCOMPARE(mon.vramExperts(), 4);
        QCOMPARE(mon.vramCapacity(), 16);
        QCOMPARE(mon.vramBytes(), 3600.0);
        QCOMPARE(mon.vramBudgetBytes(), 14400.0);
        QCOMPARE(changed.count(), 1);
        const TierRow& vram = rows.at(vramRow);
        QVERIFY(vram.available);
        QCOMPARE(vram.experts, 4);
        QCOMPARE(vram.capacity, 16);
        QCOMPARE(vram.bytes, 3600.0);
        QCOMPARE(vram.share, 0.25);
        QCOMPARE(vram.hitSession, 0.25);
        QCOMPARE(vram.hitLast, 0.4);
        QCOMPARE(mon.hitRateSession(), 0.7); // (25 + 20 + 30 - 5) / 100
        QCOMPARE(mon.hitRateLast(), 0.7);    // (4 + 2 + 1) / 10
        QCOMPARE(mon.hitRateSession(), coli::tiers::hitRate(s.counters));
        double sum = 0;
        for (int i = 0; i < rows.rowCount(); ++i)
            if (rows.at(i).hitSession >= 0) sum += rows.at(i).hitSession;
        QCOMPARE(sum, 1.0);
        // The RAM bar's segments leave VRAM out: its bytes are not the RAM budget's.
        for (const QVariant& seg : mon.ramSegments())
            QVERIFY(seg.toMap().value("key").toString() != "vram");
        // Another model without a GPU tier: the row goes back to unavailable.
        s = base();
        s.serial = 3;
        mon.apply(s);
        QVERIFY(!rows.at(vramRow).available);
        QCOMPARE(rows.at(vramRow).hitSession, -1.0);
    }

    void aPromptAloneGivesNoAnswerFigure() {
        TierMonitor mon;
        TierStatus s = base();
        mon.apply(s);
        s.serial = 2;
        s.counters.tokens = 30; // one prefill chunk of 30 tokens read 15 MiB; no decode step yet
        s.counters.bytesRead = 15 * 1024 * 1024;
        s.last = s.counters;
        mon.apply(s);
        QCOMPARE(mon.mibPerPromptTokenSession(), 0.5);
        QCOMPARE(mon.mibPerTokenSession(), -1.0); // shown "–", never the prompt's figure
        QCOMPARE(mon.mibPerTokenLast(), -1.0);
    }

    void resetSessionCountsFromNowAndAReloadRestarts() {
        TierMonitor mon;
        TierStatus s = base();
        s.counters.routed = 10;
        s.counters.hitsPinned = 10;
        s.counters.tokens = 3;
        mon.apply(s);
        QCOMPARE(mon.hitRateSession(), -1.0); // nothing since the session began
        s.serial = 2;
        s.counters.routed = 20;
        s.counters.misses = 10;
        s.counters.tokens = 6;
        mon.apply(s);
        QCOMPARE(mon.hitRateSession(), 0.0);
        mon.resetSession();
        QCOMPARE(mon.sessionTokens(), 0);
        s.serial = 3;
        s.counters.tokens = 2; // the clock went back: another model was loaded
        s.counters.routed = 4;
        s.counters.hitsPinned = 10;
        s.counters.misses = 10;
        mon.apply(s);
        QCOMPARE(mon.sessionTokens(), 0);
    }

    // The VRAM budget control: only with a GPU tier, from one expert to every routed expert
    // (above it: every expert; below one expert it goes to the engine, which says why it
    // refuses), the value asked for shown until the engine ran it. A VRAM change that moves the
    // RAM budget's ceiling (a device sharing the system's memory) keeps the session; a new load
    // restarts it.
    void vramBudgetControlRangeForwardingAndSession() {
        TierMonitor mon;
        std::vector<uint64_t> asked;
        mon.setVramRequest([&](uint64_t b) { asked.push_back(b); });
        TierStatus s = base();
        s.loadId = 7;
        mon.apply(s);
        mon.setVramBudgetBytes(5000); // no GPU tier: nothing to change
        QVERIFY(asked.empty());
        QCOMPARE(mon.minimumVramBudgetBytes(), 0.0);
        QCOMPARE(mon.maximumVramBudgetBytes(), 0.0);
        s.serial = 2;
        s.residency.vramCapacity = 16;
        s.residency.vramBudgetBytes = 16 * 300; // 300 bytes per expert in VRAM
        s.counters.routed = 10;
        s.counters.hitsVram = 10;
        s.counters.tokens = 1;
        mon.apply(s);
        QVERIFY(mon.vramAvailable());
        QCOMPARE(mon.minimumVramBudgetBytes(), 300.0);
        QCOMPARE(mon.maximumVramBudgetBytes(), 300.0 * 64);
        QCOMPARE(mon.vramBudgetAskedBytes(), -1.0);
        QSignalSpy changed(&mon, &TierMonitor::changed);
        mon.setVramBudgetBytes(1e12);
        mon.setVramBudgetBytes(100); // below one expert: the engine's refusal tells the user
        mon.setVramBudgetBytes(qQNaN());
        mon.setVramBudgetBytes(-5);
        QCOMPARE(asked, (std::vector<uint64_t>{300 * 64, 100, 0}));
        QCOMPARE(mon.vramBudgetAskedBytes(), 0.0);
        QCOMPARE(changed.count(), 3);
        mon.vramRequestDone();
        QCOMPARE(mon.vramBudgetAskedBytes(), -1.0);
        mon.setVramBudgetBytes(3000);
        QCOMPARE(mon.vramBudgetAskedBytes(), 3000.0);
        // The engine applied 10 experts; the RAM ceiling moved with them: the same session.
        s.serial = 3;
        s.residency.vramCapacity = 10;
        s.residency.vramBudgetBytes = 3000;
        s.maximumBudget += 3000;
        s.counters.routed = 30;
        s.counters.hitsVram = 20;
        s.counters.misses = 10;
        s.counters.tokens = 3;
        mon.apply(s);
        mon.vramRequestDone();
        QCOMPARE(mon.vramBudgetBytes(), 3000.0);
        QCOMPARE(mon.sessionTokens(), 3); // since the load's first status
        QCOMPARE(mon.hitRateSession(), 20.0 / 30);
        // Another model (its first status may come with counters ahead of the last ones').
        s.serial = 4;
        s.loadId = 8;
        s.counters.tokens = 5;
        mon.apply(s);
        QCOMPARE(mon.sessionTokens(), 0);
    }

    void budgetControlIsClampedAndForwarded() {
        TierMonitor mon;
        std::vector<uint64_t> asked;
        std::vector<bool> prefetch;
        mon.setRequests([&](uint64_t b) { asked.push_back(b); },
                        [&](bool on) { prefetch.push_back(on); });
        mon.setBudgetBytes(50000); // no model yet: nothing to change
        QVERIFY(asked.empty());
        mon.apply(base());
        mon.setBudgetBytes(1);
        mon.setBudgetBytes(1e12);
        mon.setBudgetBytes(12345);
        mon.setBudgetBytes(qQNaN());
        QCOMPARE(asked, (std::vector<uint64_t>{6000, 70000, 12345}));
        mon.setPrefetchEnabled(false);
        QCOMPARE(prefetch, std::vector<bool>{false});
    }
};

QTEST_GUILESS_MAIN(TestTierMonitor)
#include "tst_tier_monitor.moc"
