// The app's GPU setting reaches the engine (docs/gpu.md): the engine thread loads a converted
// (int4) container with LoadSettings::gpu = "llvmpipe", the tier status says a VRAM tier exists
// (vramCapacity > 0) right after the load, and after an answer routed experts are in VRAM
// (residency and the per-expert map agree, VRAM hits count in routed); the load notice carries
// the engine's GPU note. Without a Vulkan device named llvmpipe every case skips, saying why.
#include "convert/converter.h"
#include "engine_worker.h"
#include "llvmpipe_device.h"
#include "worker_pump.h"

#include <QTemporaryDir>
#include <QTest>

#include <string>

using namespace coli;
using namespace coli::app;
using coli::app::test::pump;

class TestWorkerVram : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_container;
    std::string m_skip;

private slots:
    void initTestCase() {
        m_skip = coli::app::test::missingLlvmpipe();
        if (!m_skip.empty()) return;
        QVERIFY(m_tmp.isValid());
        m_container = (m_tmp.path() + "/qwen3moe-int4").toStdString();
        auto rep = convert::convertCheckpoint(std::string(COLI_FIXTURE_DIR) + "/qwen3moe",
                                              m_container, convert::ConvertOptions{});
        QVERIFY2(rep.isOk(), rep.status().toString().c_str());
    }

    void loadWithGpuGivesAVramTierThatFillsAsRouted() {
        if (!m_skip.empty()) QSKIP(("no Vulkan device named llvmpipe: " + m_skip).c_str());
        EngineWorker w({.threads = 1}, nullptr);
        Command load{CommandKind::Load};
        load.id = 1;
        load.dir = m_container;
        load.load.gpu = "llvmpipe";
        w.post(std::move(load));
        // The GPU note follows Loaded as a Notice: a GPU was asked for, so there is one.
        std::string failed, notice;
        bool loaded = false;
        QVERIFY(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::LoadFailed) failed = ev.text;
            if (ev.kind == EventKind::Loaded) loaded = true;
            if (ev.kind == EventKind::Notice) notice = ev.text;
            return ev.kind == EventKind::LoadFailed || (loaded && ev.kind == EventKind::Notice);
        }));
        QVERIFY2(failed.empty(), failed.c_str());
        // Model::gpuNote(): the device that computes experts and its budget.
        QVERIFY2(QString::fromStdString(notice).contains("llvmpipe", Qt::CaseInsensitive),
                 notice.c_str());
        TierStatus s = w.tierStatus();
        QVERIFY(s.streaming);
        QVERIFY(s.residency.vramCapacity > 0);
        QVERIFY(s.residency.vramBudgetBytes > 0);
        QCOMPARE(s.residency.vramExperts, 0); // streamed experts enter VRAM as they are routed

        Command gen{CommandKind::Generate};
        gen.id = 2;
        gen.messages = {{"user", "Tell me about the sea and the ships on it."}};
        gen.params.maxNewTokens = 12;
        gen.params.ignoreEos = true;
        gen.sampling.temperature = 0.f;
        w.post(std::move(gen));
        QVERIFY(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::Failed) failed = ev.text;
            return ev.kind == EventKind::Finished || ev.kind == EventKind::Failed;
        }));
        QVERIFY2(failed.empty(), failed.c_str());
        s = w.tierStatus();
        QVERIFY(s.residency.vramExperts > 0);
        QVERIFY(s.residency.vramExperts <= s.residency.vramCapacity);
        QVERIFY(s.residency.vramBytes > 0);
        int inVram = 0;
        for (uint8_t b : s.experts.state)
            inVram += (b & tiers::kExpertStateMask) == uint8_t(tiers::ExpertState::Vram);
        QCOMPARE(inVram, s.residency.vramExperts);
        QVERIFY(s.counters.hitsVram > 0);
        QCOMPARE(s.counters.routed, s.counters.hitsPinned + s.counters.hitsCache +
                                        s.counters.misses + s.counters.hitsVram);
    }
};

QTEST_GUILESS_MAIN(TestWorkerVram)
#include "tst_worker_vram.moc"
