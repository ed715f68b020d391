// The VRAM budget at run time (docs/app.md "Tiers view", docs/gpu.md "Budget"): the default
// model's int4 container loaded with the GPU setting "llvmpipe" (Mesa's lavapipe), its VRAM
// budget changed down and up through the app's path (TierMonitor::setVramBudgetBytes ->
// EngineController -> EngineWorker::requestVramBudget -> Model::setVramBudget on the engine
// thread): the Tiers telemetry (vramCapacity, vramBudgetBytes, the RAM budget's ceiling that counts
// the tier on a device sharing the system's memory) follows, the value in force is saved in the
// settings and applied by the next load, and a budget below one expert is refused with the
// engine's reason in the banner, the tier keeping its size. On the engine thread, a budget asked
// for during an answer is applied only when the answer ends. Without a Vulkan device named
// llvmpipe every case skips, saying why.
#include "app_settings.h"
#include "app_window.h"
#include "convert/converter.h"
#include "engine_controller.h"
#include "engine_worker.h"
#include "llvmpipe_device.h"
#include "worker_pump.h"

#include <QCoreApplication>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <string>

using namespace coli;
using namespace coli::app;
using coli::app::test::pump;

namespace {
constexpr double kMiB = 1048576.0;

} // namespace

class TestVramBudget : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_container;
    std::string m_skip;

    // Asks for `bytes` through the Tiers view's monitor and waits until the engine ran it.
    static bool askVram(EngineController& c, double bytes) {
        c.tiers()->setVramBudgetBytes(bytes);
        if (c.tiers()->vramBudgetAskedBytes() < 0) return false; // not forwarded
        return QTest::qWaitFor([&] { return c.tiers()->vramBudgetAskedBytes() < 0; }, 30000);
    }

private slots:
    void initTestCase() {
        m_skip = coli::app::test::missingLlvmpipe();
        if (!m_skip.empty()) return;
        QVERIFY(m_tmp.isValid());
        m_container = (m_tmp.path() + "/colibri-moe-tiny-int4").toStdString();
        auto rep = convert::convertCheckpoint(COLI_SHIPPED_MODEL_DIR, m_container,
                                              convert::ConvertOptions{});
        QVERIFY2(rep.isOk(), rep.status().toString().c_str());
    }

    void controllerChangesTheVramBudgetDownAndUp() {
        if (!m_skip.empty()) QSKIP(("no Vulkan device named llvmpipe: " + m_skip).c_str());
        AppSettings settings(QString{});
        settings.setGpuDevice(QStringLiteral("llvmpipe"));
        settings.setVramBudgetMiB(0); // the engine's default
        EngineController c(WorkerOptions{.threads = 1});
        connectSettings(&settings, &c, 1);
        GenerateParams p;
        p.maxNewTokens = 12;
        p.ignoreEos = true;
        SamplingOverrides greedy;
        greedy.temperature = 0;
        c.setGenerateParams(p, greedy);
        const QString dir = QString::fromStdString(m_container);
        c.loadModel(dir);
        QTRY_VERIFY_WITH_TIMEOUT(c.loadState() != QLatin1String("loading"), 120000);
        QCOMPARE(c.loadState(), QStringLiteral("ready"));
        TierMonitor* t = c.tiers();
        QTRY_VERIFY_WITH_TIMEOUT(t->vramAvailable(), 10000);

        // The control's range: one expert .. every routed expert.
        const double per = t->minimumVramBudgetBytes();
        const int total = t->totalExperts();
        QVERIFY(per > 0);
        QVERIFY(total > 10);
        QCOMPARE(t->maximumVramBudgetBytes(), per * total);
        QCOMPARE(t->vramBudgetBytes(), per * t->vramCapacity());
        const int start = t->vramCapacity();
        const double ramCeiling = t->maximumBudgetBytes();

        // Down to 10 experts (a value between two whole experts holds the lower one).
        QSignalSpy applied(&c, &EngineController::vramBudgetApplied);
        QVERIFY(askVram(c, per * 10.5));
        QCOMPARE(applied.count(), 1);
        QCOMPARE(applied.first().first().toDouble(), per * 10);
        QCOMPARE(t->vramCapacity(), 10);
        QCOMPARE(t->vramBudgetBytes(), per * 10);
        QVERIFY(t->vramExperts() <= 10);
        // lavapipe shares the system's memory: the tier's bytes count in the RAM budget, whose
        // ceiling moves with them.
        QCOMPARE(t->maximumBudgetBytes(), ramCeiling - per * (start - 10));
        // Remembered for the next loads, exactly (whole experts, as the engine reported them).
        QCOMPARE(settings.vramBudgetMiB() * kMiB, per * 10);
        QVERIFY(!c.errorText().contains(QLatin1String("not changed")));

        // An answer under it: the GPU computes routed experts, never more than 10 in VRAM.
        QSignalSpy done(&c, &EngineController::answerFinished);
        QVERIFY(c.send(QStringLiteral("Tell me about the sea and the ships on it.")));
        // Asked for while the answer runs: it waits for the answer's end.
        t->setVramBudgetBytes(per * 4);
        QCOMPARE(t->vramBudgetAskedBytes(), per * 4);
        QVERIFY(done.wait(60000));
        QTRY_COMPARE_WITH_TIMEOUT(t->vramBudgetAskedBytes(), -1.0, 30000);
        QCOMPARE(t->vramCapacity(), 4);
        QCOMPARE(t->vramBudgetBytes(), per * 4);
        QVERIFY(t->status().counters.hitsVram > 0);
        QCOMPARE(settings.vramBudgetMiB() * kMiB, per * 4);

        // Up: more than every expert holds every expert.
        QVERIFY(askVram(c, per * total * 3));
        QCOMPARE(t->vramCapacity(), total);
        QCOMPARE(t->vramBudgetBytes(), per * total);
        QCOMPARE(t->maximumBudgetBytes(), ramCeiling + per * (total - start));
        QCOMPARE(settings.vramBudgetMiB() * kMiB, per * total);

        // Below one expert: refused, the engine's reason in the banner as a notice (as the RAM
        // budget's), the tier and the setting as they were.
        const int appliedBefore = int(applied.count());
        QVERIFY(askVram(c, per / 2));
        QCOMPARE(int(applied.count()), appliedBefore);
        QVERIFY2(c.errorText().contains(QLatin1String("The VRAM budget was not changed")),
                 qPrintable(c.errorText()));
        QVERIFY2(c.errorText().contains(QLatin1String("holds no expert")),
                 qPrintable(c.errorText()));
        QCOMPARE(c.noticeKind(), QStringLiteral("info"));
        QCOMPARE(t->vramCapacity(), total);
        QCOMPARE(t->vramBudgetBytes(), per * total);
        QCOMPARE(settings.vramBudgetMiB() * kMiB, per * total);

        // A budget set in the settings applies to the loaded model at once, and to the next load
        // before its first answer (the load notice says so).
        settings.setVramBudgetMiB(per * 7 / kMiB);
        QTRY_COMPARE_WITH_TIMEOUT(t->vramCapacity(), 7, 30000);
        c.loadModel(dir);
        QTRY_VERIFY_WITH_TIMEOUT(c.loadState() == QLatin1String("ready"), 120000);
        QTRY_VERIFY_WITH_TIMEOUT(c.errorText().contains(QLatin1String("VRAM budget from the "
                                                                      "settings")),
                                 10000);
        QTRY_VERIFY_WITH_TIMEOUT(t->vramAvailable(), 10000);
        QCOMPARE(t->vramCapacity(), 7);
        QCOMPARE(t->vramBudgetBytes(), per * 7);
        QCOMPARE(c.loadSettings().vramBudgetBytes, uint64_t(per * 7));
        c.shutdown();
    }

    // The engine thread applies a VRAM budget between answers only: asked for while an answer
    // streams, every piece of that answer is produced under the old budget (a one-slot ring
    // holds the engine at each piece until this thread has looked), then the VramBudget event
    // reports the new one. A refused budget reports why and keeps the tier's size.
    void engineAppliesTheBudgetBetweenAnswers() {
        if (!m_skip.empty()) QSKIP(("no Vulkan device named llvmpipe: " + m_skip).c_str());
        EngineWorker w({.threads = 1, .ringCapacity = 1}, nullptr);
        Command load{CommandKind::Load};
        load.id = 1;
        load.dir = m_container;
        load.load.gpu = "llvmpipe";
        w.post(std::move(load));
        std::string failed;
        bool loaded = false;
        QVERIFY(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::LoadFailed) failed = ev.text;
            if (ev.kind == EventKind::Loaded) loaded = true;
            return ev.kind == EventKind::LoadFailed || (loaded && ev.kind == EventKind::Notice);
        }));
        QVERIFY2(failed.empty(), failed.c_str());
        const TierStatus s = w.tierStatus();
        QVERIFY(s.residency.vramCapacity > 5);
        const int full = s.residency.vramCapacity;
        const uint64_t per = s.residency.vramBudgetBytes / uint64_t(full);

        Command gen{CommandKind::Generate};
        gen.id = 2;
        gen.messages = {{"user", "Tell me about the sea and the ships on it."}};
        gen.params.maxNewTokens = 16;
        gen.params.ignoreEos = true;
        gen.sampling.temperature = 0.f;
        w.post(std::move(gen));
        w.requestVramBudget(per * 5);
        int pieces = 0, changedDuring = 0;
        bool finished = false;
        EngineEvent vram;
        QVERIFY(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::Failed) failed = ev.text;
            if (ev.kind == EventKind::Piece) {
                ++pieces;
                changedDuring += w.tierStatus().residency.vramCapacity != full;
            }
            if (ev.kind == EventKind::Finished) finished = true;
            if (ev.kind == EventKind::VramBudget) vram = ev;
            return ev.kind == EventKind::Failed || ev.kind == EventKind::VramBudget;
        }));
        QVERIFY2(failed.empty(), failed.c_str());
        QVERIFY(finished); // the budget's event came after the answer's end
        QVERIFY(pieces > 0);
        QCOMPARE(changedDuring, 0);
        QVERIFY2(vram.text.empty(), vram.text.c_str());
        QCOMPARE(vram.vramBudgetBytes, per * 5);
        QCOMPARE(w.tierStatus().residency.vramCapacity, 5);
        QCOMPARE(w.tierStatus().residency.vramBudgetBytes, per * 5);

        w.requestVramBudget(per - 1); // below one expert
        QVERIFY(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::VramBudget) vram = ev;
            return ev.kind == EventKind::VramBudget;
        }));
        QVERIFY2(vram.text.find("not changed") != std::string::npos, vram.text.c_str());
        QCOMPARE(vram.vramBudgetBytes, per * 5);
        QCOMPARE(w.tierStatus().residency.vramCapacity, 5);
    }
};

int main(int argc, char** argv) {
    QTemporaryDir home; // the settings and the GPU self-test's cache out of the user's folders
    qputenv("XDG_CONFIG_HOME", (home.path() + "/config").toLocal8Bit());
    qputenv("XDG_CACHE_HOME", (home.path() + "/cache").toLocal8Bit());
    QCoreApplication app(argc, argv);
    TestVramBudget t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_vram_budget.moc"
