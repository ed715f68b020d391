// The engine thread's tier status and live controls (docs/app.md "Tiers"): the RAM budget
// lowered during an answer holds from the next token on, the answer's tokens do not change
// (placement invariance), prefetch switches when idle, and load-time settings are clamped.
// Drives the real EngineWorker (the app's engine thread) on a fixture model; no window.
#include "engine_worker.h"
#include "learning/learned_usage.h"
#include "worker_pump.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace coli;
using namespace coli::app;
using namespace std::chrono_literals;

namespace {

const std::string kModel = std::string(COLI_FIXTURE_DIR) + "/qwen3moe";

using coli::app::test::pump;

void load(EngineWorker& w) {
    Command c{CommandKind::Load};
    c.id = 1;
    c.dir = kModel;
    w.post(std::move(c));
    std::string failed;
    ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::LoadFailed) failed = ev.text;
        return ev.kind == EventKind::Loaded || ev.kind == EventKind::LoadFailed;
    }));
    ASSERT_TRUE(failed.empty()) << failed;
}

Command generate(uint64_t id) {
    Command c{CommandKind::Generate};
    c.id = id;
    c.messages = {{"user", "Tell me about the sea and the ships on it."}};
    c.params.maxNewTokens = 40;
    c.params.ignoreEos = true;
    c.sampling.temperature = 0.f;
    return c;
}

} // namespace

TEST(WorkerTiers, StatusAfterLoadDescribesTheCache) {
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const TierStatus s = w.tierStatus();
    ASSERT_TRUE(s.streaming);
    EXPECT_GT(s.residency.totalExperts, 0);
    EXPECT_GT(s.minimumBudget, 0u);
    EXPECT_GE(s.maximumBudget, s.minimumBudget);
    EXPECT_GE(s.residency.budgetBytes, s.minimumBudget);
    EXPECT_LE(s.residency.budgetBytes, s.maximumBudget);
    EXPECT_FALSE(s.backend.empty());
    EXPECT_GT(s.expertReadBytes, 0u);
}

TEST(WorkerTiers, BudgetLoweredDuringAnAnswerHoldsFromTheNextTokenAndKeepsTheTokens) {
    // Reference: the same answer with the budget untouched.
    std::vector<int32_t> reference;
    {
        EngineWorker w({.threads = 1}, nullptr);
        load(w);
        w.post(generate(2));
        ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::Finished) reference = ev.stats.generatedIds;
            return ev.kind == EventKind::Finished || ev.kind == EventKind::Failed;
        }));
        ASSERT_EQ(reference.size(), 40u);
    }
    // A ring of 4 events: the engine blocks when the ring is full, so it cannot finish the answer
    // before this thread has seen piece 8 and asked (with the default 1024 it once did, on a
    // loaded CI machine: the budget was applied only after the answer).
    EngineWorker w({.threads = 1, .ringCapacity = 4}, nullptr);
    load(w);
    const TierStatus before = w.tierStatus();
    ASSERT_GT(before.maximumBudget, before.minimumBudget) << "the fixture needs room to shrink";
    const uint64_t target = before.minimumBudget;
    w.post(generate(2));
    int pieces = 0;
    bool asked = false;
    uint64_t appliedAt = 0; // the token clock when the new budget was first seen in force
    int checked = 0;
    std::vector<int32_t> ids;
    std::string failure;
    ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::Piece && ++pieces == 8 && !asked) {
            w.requestBudget(target);
            asked = true;
        }
        // Every status sampled after the change and at least one token later is within it.
        const TierStatus s = w.tierStatus();
        if (asked && s.residency.budgetBytes == target) {
            if (appliedAt == 0) appliedAt = s.counters.tokens;
            if (s.counters.tokens > appliedAt) {
                ++checked;
                if (s.residency.allocatedBytes > target && failure.empty())
                    failure = "allocated " + std::to_string(s.residency.allocatedBytes) +
                              " bytes over the budget of " + std::to_string(target) + " at token " +
                              std::to_string(s.counters.tokens);
            }
        }
        if (ev.kind == EventKind::Finished) ids = ev.stats.generatedIds;
        return ev.kind == EventKind::Finished || ev.kind == EventKind::Failed;
    }));
    EXPECT_TRUE(failure.empty()) << failure;
    EXPECT_GT(appliedAt, 0u) << "the budget was never seen in force";
    EXPECT_GT(checked, 0) << "no status sampled after the change";
    const TierStatus after = w.tierStatus();
    EXPECT_EQ(after.residency.budgetBytes, target);
    EXPECT_LE(after.residency.allocatedBytes, target);
    EXPECT_GT(after.counters.evictions, before.counters.evictions);
    EXPECT_EQ(ids, reference) << "a budget change must never change a token";
}

TEST(WorkerTiers, PrefetchSwitchAndBudgetApplyWhileIdle) {
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const TierStatus s0 = w.tierStatus();
    ASSERT_TRUE(s0.prefetch);
    w.requestPrefetch(false);
    w.requestBudget(1); // below the minimum: clamped to it
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    TierStatus s = w.tierStatus();
    while ((s.prefetch || s.residency.budgetBytes != s0.minimumBudget) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
        s = w.tierStatus();
    }
    EXPECT_FALSE(s.prefetch);
    EXPECT_EQ(s.residency.budgetBytes, s0.minimumBudget);
    EXPECT_GT(s.serial, s0.serial);
}

TEST(WorkerTiers, LoadTimeSettingsAreClamped) {
    EngineWorker w({.threads = 1, .expertBudgetBytes = 1, .prefetch = false}, nullptr);
    load(w);
    const TierStatus s = w.tierStatus();
    EXPECT_EQ(s.residency.budgetBytes, s.minimumBudget);
    EXPECT_FALSE(s.prefetch);
    EngineWorker big({.threads = 1, .expertBudgetBytes = uint64_t(1) << 50}, nullptr);
    load(big);
    EXPECT_EQ(big.tierStatus().residency.budgetBytes, big.tierStatus().maximumBudget);
}

namespace {

// One answer (generate(2)) on `w`: the engine's stats, and the worker's split of the turn's tier
// counters into its decode steps and its prompt. `finished` is false when it did not finish.
struct Turn {
    bool finished = false;
    GenerateStats stats;
    TierStatus after;
    tiers::TierCounters decode, prompt;
};
Turn runTurn(EngineWorker& w) {
    Turn turn;
    const TierStatus before = w.tierStatus();
    w.post(generate(2));
    const bool pumped = pump(w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::Finished) {
            turn.stats = ev.stats;
            turn.finished = true;
        }
        return ev.kind == EventKind::Finished || ev.kind == EventKind::Failed;
    });
    turn.finished = turn.finished && pumped;
    turn.after = w.tierStatus();
    turn.decode = turn.after.decodeCounters - before.decodeCounters;
    turn.prompt = (turn.after.counters - before.counters) - turn.decode;
    return turn;
}

} // namespace

// The Tiers view's read per token is the decode steps' apart from the prompt's: the worker counts
// the steps after GenerateParams::onPrefillDone as decode steps, and they match the engine's own
// split of the turn (GenerateStats::tiersDecode).
TEST(WorkerTiers, DecodeStepsAreCountedApartFromThePrompt) {
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const Turn t = runTurn(w);
    ASSERT_TRUE(t.finished);
    // 40 sampled tokens: the last is not run through the model.
    EXPECT_EQ(t.decode.tokens, 39u);
    EXPECT_EQ(t.prompt.tokens, uint64_t(t.stats.promptTokens - t.stats.reusedTokens));
    EXPECT_EQ(t.decode.routed, t.stats.tiersDecode.routed);
    EXPECT_EQ(t.prompt.routed, t.stats.tiersPrefill.routed);
    EXPECT_EQ(t.after.lastDecode.tokens, 1u);
    EXPECT_GT(t.decode.routed, 0u);
}

// At the smallest budget both parts read from disk, and the bytes of each part are the engine's.
TEST(WorkerTiers, ReadBytesAreSplitAsTheEngineSplitsThem) {
    EngineWorker w({.threads = 1, .expertBudgetBytes = 1}, nullptr);
    load(w);
    for (int turn = 0; turn < 3; ++turn) {
        const Turn t = runTurn(w);
        ASSERT_TRUE(t.finished) << "turn " << turn;
        EXPECT_EQ(t.prompt.bytesRead, t.stats.tiersPrefill.bytesRead) << "turn " << turn;
        EXPECT_EQ(t.decode.bytesRead, t.stats.tiersDecode.bytesRead) << "turn " << turn;
        EXPECT_GT(t.prompt.bytesRead, 0u) << "turn " << turn;
        EXPECT_GT(t.decode.bytesRead, 0u) << "turn " << turn;
    }
}

// The Brain and Atlas views' map travels with every status: one state byte and a hit count per
// (layer, expert), the hits adding up to the routed count of the same snapshot.
TEST(WorkerTiers, ExpertMapIsPublishedWithEveryStatus) {
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const TierStatus s0 = w.tierStatus();
    ASSERT_GT(s0.experts.nLayers, 0);
    ASSERT_GT(s0.experts.nExperts, 0);
    const size_t n = size_t(s0.experts.nLayers) * size_t(s0.experts.nExperts);
    ASSERT_EQ(s0.experts.state.size(), n);
    ASSERT_EQ(s0.experts.hits.size(), n);
    w.post(generate(2));
    int statuses = 0;
    std::string failure;
    ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
        const TierStatus s = w.tierStatus();
        uint64_t hits = 0;
        for (uint32_t h : s.experts.hits)
            hits += h;
        if (hits != s.counters.routed && failure.empty())
            failure = std::to_string(hits) + " hits vs " + std::to_string(s.counters.routed) +
                      " routed at serial " + std::to_string(s.serial);
        ++statuses;
        return ev.kind == EventKind::Finished || ev.kind == EventKind::Failed;
    }));
    EXPECT_TRUE(failure.empty()) << failure;
    EXPECT_GT(statuses, 0);
    // Idle, reads landed (republished every 50 ms while any is in flight): the map's states
    // agree with the residency counts.
    TierStatus s = w.tierStatus();
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (s.residency.loadingExperts > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
        s = w.tierStatus();
    }
    ASSERT_EQ(s.residency.loadingExperts, 0);
    EXPECT_GT(s.counters.routed, 0u);
    int counts[6] = {}; // by ExpertState, Vram included
    for (uint8_t b : s.experts.state)
        ++counts[b & tiers::kExpertStateMask];
    EXPECT_EQ(counts[int(tiers::ExpertState::Cached)], s.residency.cachedExperts);
    EXPECT_EQ(counts[int(tiers::ExpertState::Pinned)], s.residency.pinnedExperts);
    EXPECT_EQ(counts[int(tiers::ExpertState::Loading)], 0);
    EXPECT_EQ(counts[int(tiers::ExpertState::Disk)], s.residency.diskExperts);
    EXPECT_GT(s.residency.cachedExperts + s.residency.pinnedExperts, 0);
}

namespace {

Command userPin(UserPinChange::Action action, int layer, int expert) {
    Command c{CommandKind::UserPin};
    c.id = 77;
    c.pin.action = action;
    c.pin.layer = layer;
    c.pin.expert = expert;
    return c;
}

// The first routed expert of the map that is in none of the hot-store's places.
std::pair<int, int> unpinnedExpert(const tiers::ExpertMap& m) {
    for (int l = 0; l < m.nLayers; ++l)
        for (int e = 0; e < m.nExperts; ++e) {
            const uint8_t b = m.state[size_t(l * m.nExperts + e)];
            if (b != uint8_t(tiers::ExpertState::None) &&
                (b & tiers::kExpertStateMask) != uint8_t(tiers::ExpertState::Pinned))
                return {l, e};
        }
    return {-1, -1};
}

uint8_t stateOf(const TierStatus& s, int layer, int expert) {
    return s.experts.state[size_t(layer * s.experts.nExperts + expert)];
}

// Waits for the UserPin event; returns it.
EngineEvent waitPin(EngineWorker& w) {
    EngineEvent got;
    EXPECT_TRUE(pump(w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::UserPin) got = ev;
        return ev.kind == EventKind::UserPin;
    }));
    return got;
}

} // namespace

// A pin asked for during an answer is applied after it (a turn boundary), never mid-answer, and
// changes no token; the map then shows it as a user pin.
TEST(WorkerTiers, UserPinAppliesAtTheTurnBoundaryAndKeepsTheTokens) {
    std::vector<int32_t> reference;
    {
        EngineWorker w({.threads = 1}, nullptr);
        load(w);
        w.post(generate(2));
        ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::Finished) reference = ev.stats.generatedIds;
            return ev.kind == EventKind::Finished || ev.kind == EventKind::Failed;
        }));
        ASSERT_EQ(reference.size(), 40u);
    }
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const auto [layer, expert] = unpinnedExpert(w.tierStatus().experts);
    ASSERT_GE(layer, 0);
    ASSERT_GT(w.tierStatus().pinCapacity, 0);
    // Posted while the answer is queued or running (the fixture answers faster than a test could
    // react to a piece): it must run after the answer's last token.
    w.post(generate(2));
    w.post(userPin(UserPinChange::Action::Pin, layer, expert));
    bool finished = false, pinBeforeEnd = false, pinSeen = false;
    std::vector<int32_t> ids;
    EngineEvent pinEvent;
    ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::Finished) {
            finished = true;
            ids = ev.stats.generatedIds;
        }
        if (ev.kind == EventKind::UserPin) { // the ring keeps the engine's order
            pinSeen = true;
            pinEvent = ev;
            if (!finished) pinBeforeEnd = true;
        }
        return pinSeen || ev.kind == EventKind::Failed;
    }));
    EXPECT_TRUE(finished);
    EXPECT_FALSE(pinBeforeEnd) << "the pin was applied before the answer ended";
    EXPECT_EQ(ids, reference) << "a user pin must never change a token";
    EXPECT_TRUE(pinEvent.pinApplied) << pinEvent.text;
    EXPECT_EQ(pinEvent.text,
              "Pinned layer " + std::to_string(layer) + " expert " + std::to_string(expert) + ".");
    EXPECT_TRUE(stateOf(w.tierStatus(), layer, expert) & tiers::kUserPinFlag);
    // Unpinned again when idle: at once.
    w.post(userPin(UserPinChange::Action::Unpin, layer, expert));
    const EngineEvent un = waitPin(w);
    EXPECT_TRUE(un.pinApplied);
    EXPECT_FALSE(stateOf(w.tierStatus(), layer, expert) & tiers::kUserPinFlag);
}

TEST(WorkerTiers, UserPinBeyondTheHotStoreIsRefused) {
    EngineWorker w({.threads = 1, .expertBudgetBytes = 1}, nullptr); // the minimum: no places
    load(w);
    ASSERT_EQ(w.tierStatus().pinCapacity, 0);
    const auto [layer, expert] = unpinnedExpert(w.tierStatus().experts);
    w.post(userPin(UserPinChange::Action::Pin, layer, expert));
    const EngineEvent ev = waitPin(w);
    EXPECT_FALSE(ev.pinApplied);
    EXPECT_EQ(ev.text, "the hot-store is full: 0 of 0 places are pinned; unpin an expert or "
                       "raise the RAM budget");
    EXPECT_EQ(stateOf(w.tierStatus(), layer, expert) & tiers::kUserPinFlag, 0);
}

// Unpinning a learned pin excludes it (learned pins come from the usage database: here a
// LearnedUsage handed over as the storage thread would), until the exclusions are reset.
TEST(WorkerTiers, UnpinningALearnedPinExcludesItUntilReset) {
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const auto [layer, expert] = unpinnedExpert(w.tierStatus().experts);
    auto usage = std::make_shared<learning::LearnedUsage>();
    usage->pins = {{layer, expert}};
    usage->heat = {{layer, expert, 5.0, 0}};
    Command apply{CommandKind::ApplyUsage};
    apply.dir = kModel;
    apply.usage = usage;
    w.post(std::move(apply));
    w.post(userPin(UserPinChange::Action::ResetExclusions, -1, -1)); // a marker: usage applied
    ASSERT_TRUE(waitPin(w).pinApplied);
    ASSERT_EQ(stateOf(w.tierStatus(), layer, expert) & tiers::kExpertStateMask,
              uint8_t(tiers::ExpertState::Pinned));
    w.post(userPin(UserPinChange::Action::Exclude, layer, expert));
    const EngineEvent ev = waitPin(w);
    EXPECT_TRUE(ev.pinApplied) << ev.text;
    EXPECT_EQ(ev.text, "Unpinned layer " + std::to_string(layer) + " expert " +
                           std::to_string(expert) +
                           ": excluded from learned pins until you reset the exclusions.");
    EXPECT_NE(stateOf(w.tierStatus(), layer, expert) & tiers::kExpertStateMask,
              uint8_t(tiers::ExpertState::Pinned));
    // A turn's rebalancing does not pin it again while excluded.
    w.post(generate(3));
    ASSERT_TRUE(pump(w, [&](const EngineEvent& e) {
        return e.kind == EventKind::Finished || e.kind == EventKind::Failed;
    }));
    EXPECT_NE(stateOf(w.tierStatus(), layer, expert) & tiers::kExpertStateMask,
              uint8_t(tiers::ExpertState::Pinned));
    w.post(userPin(UserPinChange::Action::ResetExclusions, -1, -1));
    EXPECT_EQ(waitPin(w).text, "Exclusions reset: learned pins may choose any expert again.");
}

// A budget lowered below the user pins unpins the coldest of them (learned pins first) and says
// so in a notice of the loaded model.
TEST(WorkerTiers, BudgetBelowTheUserPinsUnpinsThemWithANotice) {
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    const auto [layer, expert] = unpinnedExpert(w.tierStatus().experts);
    w.post(userPin(UserPinChange::Action::Pin, layer, expert));
    ASSERT_TRUE(waitPin(w).pinApplied);
    w.requestBudget(1); // the minimum: no hot-store places
    std::string notice;
    ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::Notice) notice = ev.text;
        return ev.kind == EventKind::Notice;
    }));
    EXPECT_NE(notice.find("1 of your 1 user pins were unpinned"), std::string::npos) << notice;
    EXPECT_EQ(stateOf(w.tierStatus(), layer, expert) & tiers::kUserPinFlag, 0);
}

// docs/tiers.md "Buffered or O_DIRECT": a file whose O_DIRECT check fails (injected through the
// test hook's environment variable) is read buffered, and the load notice names it and its file
// system; the Tiers view's read mode says so. With the Direct I/O setting on, the same file fails
// the load, named.
TEST(WorkerTiers, RefusedODirectReachesTheLoadNotice) {
    ASSERT_EQ(::setenv("COLI_TEST_REFUSE_DIRECT_IO", "qwen3moe", 1), 0);
    {
        EngineWorker w({.threads = 1}, nullptr);
        Command c{CommandKind::Load};
        c.id = 1;
        c.dir = kModel;
        w.post(std::move(c));
        bool loaded = false;
        std::string notice, failed;
        ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::Loaded) loaded = true;
            if (ev.kind == EventKind::LoadFailed) failed = ev.text;
            if (ev.kind == EventKind::Notice) notice = ev.text;
            return !failed.empty() || (loaded && !notice.empty());
        }));
        EXPECT_TRUE(failed.empty()) << failed;
        EXPECT_NE(notice.find(kModel), std::string::npos) << notice;
        EXPECT_NE(notice.find("read buffered: O_DIRECT refused on this file system ("),
                  std::string::npos)
            << notice;
        EXPECT_EQ(w.tierStatus().readMode, "buffered");
        EXPECT_FALSE(w.tierStatus().directIo);
    }
    {
        EngineWorker w({.threads = 1}, nullptr);
        Command c{CommandKind::Load};
        c.id = 1;
        c.dir = kModel;
        c.load.readMode = aio::DirectIo::On;
        w.post(std::move(c));
        std::string failed;
        ASSERT_TRUE(pump(w, [&](const EngineEvent& ev) {
            if (ev.kind == EventKind::LoadFailed) failed = ev.text;
            return ev.kind == EventKind::Loaded || ev.kind == EventKind::LoadFailed;
        }));
        EXPECT_NE(failed.find(kModel), std::string::npos) << failed;
        EXPECT_NE(failed.find("O_DIRECT refused on this file system ("), std::string::npos)
            << failed;
    }
    ::unsetenv("COLI_TEST_REFUSE_DIRECT_IO");
    // Without the injection the fixture's file reads O_DIRECT (this machine's file systems allow
    // it) and the status says so.
    EngineWorker w({.threads = 1}, nullptr);
    load(w);
    EXPECT_EQ(w.tierStatus().readMode, "O_DIRECT");
    EXPECT_TRUE(w.tierStatus().directIo);
}
