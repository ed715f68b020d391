// User pins from the window's side (docs/tiers.md "User pins"): EngineController::toggleUserPin
// and resetPinExclusions through the real engine thread and storage thread (no window). A click
// pins, a second click unpins; unpinning a learned pin excludes it; the applied changes are saved
// for the model; refusals (no such expert, the hot-store full) come back as messages at once.
#include "session_manager.h"

#include "storage/model_identity.h"
#include "storage/user_pins.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

struct Rig {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<SessionManager> sessions;

    Rig(const QString& db, WorkerOptions opt) {
        controller = std::make_unique<EngineController>(opt);
        GenerateParams p;
        p.maxNewTokens = 16;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
        sessions = std::make_unique<SessionManager>(controller.get(),
                                                    StorageWorkerOptions{.path = db.toStdString()});
        controller->loadModel(kModel);
    }
    ~Rig() {
        sessions->shutdown();
        controller->shutdown();
        sessions.reset();
    }
    // Loaded, its usage read and applied, the map in the Tiers view's status.
    bool ready() {
        return QTest::qWaitFor([&] { return controller->loadState() != "loading"; }, 60000) &&
               controller->loadState() == "ready" &&
               QTest::qWaitFor([&] { return sessions->learning(); }, 30000) &&
               QTest::qWaitFor([&] { return map().nExperts > 0; }, 10000);
    }
    const tiers::ExpertMap& map() const { return controller->tiers()->status().experts; }
    uint8_t state(int layer, int expert) const {
        return map().state[size_t(layer * map().nExperts + expert)];
    }
    // toggleUserPin / resetPinExclusions, then the message that settles it.
    std::pair<QString, bool> click(const std::function<void()>& act) {
        QSignalSpy spy(controller.get(), &EngineController::pinMessage);
        act();
        if (spy.isEmpty() && !spy.wait(30000)) return {QStringLiteral("(no message)"), false};
        return {spy.last().at(0).toString(), spy.last().at(1).toBool()};
    }
    bool settle() {
        return QTest::qWaitFor([&] { return sessions->worker()->pending() == 0; }, 10000) &&
               (QTest::qWait(50), true);
    }
};

// The model's user pins and exclusions as another connection sees them.
storage::UserPinLists stored(const QString& db) {
    auto s = storage::Storage::open(db.toStdString());
    if (!s) return {};
    auto identity = storage::modelIdentity(kModel.toStdString(), s.value().get());
    if (!identity) return {};
    auto id = s.value()->findModel(*identity);
    if (!id || !id.value()) return {};
    return storage::UserPinStore(**s).load(**id).value();
}
} // namespace

class TestUserPins : public QObject {
    Q_OBJECT
private slots:
    void clickPinsAndUnpinsAndIsSaved() {
        QTemporaryDir tmp;
        const QString db = tmp.filePath(QStringLiteral("c.db"));
        Rig r(db, WorkerOptions{.threads = 1});
        QVERIFY(r.ready());
        // A routed expert in none of the hot-store's places.
        int layer = -1, expert = -1;
        for (int l = 0; l < r.map().nLayers && layer < 0; ++l)
            for (int e = 0; e < r.map().nExperts; ++e)
                if ((r.state(l, e) & tiers::kExpertStateMask) ==
                    uint8_t(tiers::ExpertState::Disk)) {
                    layer = l;
                    expert = e;
                    break;
                }
        QVERIFY(layer >= 0);
        const QString what = QStringLiteral("layer %1 expert %2").arg(layer).arg(expert);
        auto [text, ok] = r.click([&] { r.controller->toggleUserPin(layer, expert); });
        QVERIFY2(ok, qPrintable(text));
        QCOMPARE(text, QStringLiteral("Pinned ") + what + QStringLiteral("."));
        QVERIFY(r.settle());
        QCOMPARE(stored(db).pins.size(), size_t(1));
        QCOMPARE(stored(db).pins[0].layer, layer);
        QCOMPARE(stored(db).pins[0].expert, expert);
        QVERIFY(QTest::qWaitFor([&] { return r.state(layer, expert) & tiers::kUserPinFlag; }));
        // The second click unpins it.
        std::tie(text, ok) = r.click([&] { r.controller->toggleUserPin(layer, expert); });
        QVERIFY2(ok, qPrintable(text));
        QCOMPARE(text, QStringLiteral("Unpinned ") + what + QStringLiteral("."));
        QVERIFY(r.settle());
        QVERIFY(stored(db).pins.empty());
        // Not a routed expert: refused at once.
        std::tie(text, ok) = r.click([&] { r.controller->toggleUserPin(999, 0); });
        QVERIFY(!ok);
        QVERIFY2(text.contains(QStringLiteral("not a routed expert")), qPrintable(text));
    }

    void unpinningALearnedPinExcludesItUntilReset() {
        QTemporaryDir tmp;
        const QString db = tmp.filePath(QStringLiteral("c.db"));
        Rig r(db, WorkerOptions{.threads = 1});
        QVERIFY(r.ready());
        // A turn of a learning model pins the hottest experts (rebalancing at its end).
        QSignalSpy done(r.controller.get(), &EngineController::answerFinished);
        QVERIFY(r.controller->send(QStringLiteral("Tell me about the sea.")));
        QVERIFY(done.wait(60000));
        int layer = -1, expert = -1;
        QVERIFY(QTest::qWaitFor(
            [&] {
                for (int l = 0; l < r.map().nLayers; ++l)
                    for (int e = 0; e < r.map().nExperts; ++e)
                        if (r.state(l, e) == uint8_t(tiers::ExpertState::Pinned)) {
                            layer = l;
                            expert = e;
                            return true;
                        }
                return false;
            },
            10000));
        auto [text, ok] = r.click([&] { r.controller->toggleUserPin(layer, expert); });
        QVERIFY2(ok, qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("excluded from learned pins")), qPrintable(text));
        QVERIFY(r.settle());
        QCOMPARE(stored(db).exclusions.size(), size_t(1));
        QCOMPARE(stored(db).exclusions[0].layer, layer);
        QVERIFY(stored(db).pins.empty());
        std::tie(text, ok) = r.click([&] { r.controller->resetPinExclusions(); });
        QVERIFY2(ok, qPrintable(text));
        QVERIFY(r.settle());
        QVERIFY(stored(db).exclusions.empty());
    }

    void fullHotStoreIsRefusedAtOnce() {
        QTemporaryDir tmp;
        Rig r(tmp.filePath(QStringLiteral("c.db")),
              WorkerOptions{.threads = 1, .expertBudgetBytes = 1}); // the minimum: no places
        QVERIFY(r.ready());
        QCOMPARE(r.controller->tiers()->status().pinCapacity, 0);
        auto [text, ok] = r.click([&] { r.controller->toggleUserPin(0, 0); });
        QVERIFY(!ok);
        QCOMPARE(text, QStringLiteral("the hot-store is full: 0 of 0 places are pinned; unpin an "
                                      "expert or raise the RAM budget"));
    }
};

QTEST_GUILESS_MAIN(TestUserPins)
#include "tst_user_pins.moc"
