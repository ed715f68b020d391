// Persisted chats on the engine thread (docs/app.md "Sessions", "The KV cache on disk"): the real
// EngineWorker on a fixture model, its Generate commands naming the chat (Command::kv). A chat
// whose worker is destroyed and made again after every turn (a restart) gives the same answers
// and reuses the same prompt tokens per turn as one worker that never stopped; without the file
// the restarted worker reuses nothing. A stopped turn is saved like a finished one. A new chat's
// provisional key is bound to its id, a model identity known only later saves the turns that ran
// before it, a file of another model is set aside (a warning), a deleted chat's file goes and the
// cap deletes other chats' files.
#include "engine_worker.h"
#include "model/config.h"
#include "runtime/session_kv_dir.h"
#include "runtime/session_kv_file.h"
#include "worker_pump.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace coli;
using namespace coli::app;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string kModel = std::string(COLI_FIXTURE_DIR) + "/qwen3moe";
const std::vector<std::string> kQuestions = {"Tell me about the sea and the ships on it.",
                                             "And what do the sailors eat?",
                                             "Which ship was the fastest?"};
constexpr int kAnswerTokens = 24;

using coli::app::test::pump;

std::unique_ptr<EngineWorker> loaded() {
    auto w = std::make_unique<EngineWorker>(WorkerOptions{.threads = 1}, nullptr);
    Command c{CommandKind::Load};
    c.id = 1;
    c.dir = kModel;
    w->post(std::move(c));
    std::string failed;
    const bool done = pump(*w, [&](const EngineEvent& ev) {
        if (ev.kind == EventKind::LoadFailed) failed = ev.text;
        return ev.kind == EventKind::Loaded || ev.kind == EventKind::LoadFailed;
    });
    EXPECT_TRUE(done && failed.empty()) << failed;
    return w;
}

struct Turn {
    GenerateStats stats;
    std::string text;
    bool kvEvent = false;  // a SessionKv event after it
    uint64_t kvBytes = 0;  // its size
    std::string kvWarning; // its text (warnings)
    std::vector<int64_t> kvDeleted;
    std::string openWarning; // a SessionKv event's text before the answer (the file opened)
};

SessionKvTarget target(const std::string& dir, int64_t session,
                       const std::string& identity = "fixture-qwen3moe") {
    return SessionKvTarget{.dir = dir, .session = session, .modelIdentity = identity};
}

// Runs one turn of `conversation` (ending with a user message) and waits for the Finished
// event and, when `kv` names a saved chat, the SessionKv event of its save. `cancelAfter` > 0:
// Stop after that many pieces.
Turn runTurn(EngineWorker& w, uint64_t id, const std::vector<ChatMessage>& conversation,
             const SessionKvTarget& kv, int maxTokens = kAnswerTokens, int cancelAfter = 0) {
    Command c{CommandKind::Generate};
    c.id = id;
    c.messages = conversation;
    c.params.maxNewTokens = maxTokens;
    c.params.ignoreEos = true;
    c.sampling.temperature = 0.f;
    c.kv = kv;
    w.post(std::move(c));
    Turn t;
    bool finished = false;
    const bool expectSave = kv.session > 0 && !kv.dir.empty() && !kv.modelIdentity.empty();
    int pieces = 0;
    std::string failed;
    const bool done = pump(w, [&](const EngineEvent& ev) {
        if (ev.id != id) return false;
        if (ev.kind == EventKind::Piece) {
            t.text += ev.text;
            if (++pieces == cancelAfter) w.post(Command{CommandKind::Cancel});
        } else if (ev.kind == EventKind::Failed) {
            failed = ev.text;
            return true;
        } else if (ev.kind == EventKind::Finished) {
            t.stats = ev.stats;
            finished = true;
        } else if (ev.kind == EventKind::SessionKv) {
            if (!finished) {
                t.openWarning += ev.text;
                return false;
            }
            t.kvEvent = true;
            t.kvBytes = ev.kvBytes;
            t.kvWarning = ev.text;
            t.kvDeleted = ev.kvDeleted;
        }
        return finished && (!expectSave || t.kvEvent);
    });
    EXPECT_TRUE(done) << "the turn did not end";
    EXPECT_TRUE(failed.empty()) << failed;
    return t;
}

// Waits for the SessionKv event of a bind or delete command with `id`.
EngineEvent waitKv(EngineWorker& w, uint64_t id) {
    EngineEvent got;
    EXPECT_TRUE(pump(w, [&](const EngineEvent& ev) {
        if (ev.kind != EventKind::SessionKv || ev.id != id) return false;
        got = ev;
        return true;
    }));
    return got;
}

uint64_t recordBytes() {
    auto cfg = loadConfig(kModel);
    EXPECT_TRUE(cfg.isOk());
    return SessionKvFile::recordBytes(SessionKvKey{"m", "w", cfg->nLayers, kvShape(*cfg)});
}

// The tokens a Session holds after a turn: the prompt and every sampled token but the last.
uint64_t heldTokens(const GenerateStats& s) {
    return uint64_t(s.promptTokens + s.generatedTokens - 1);
}

struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() /
               ("coli-kv-test-" + std::to_string(::getpid()) + "-" +
                std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string kv() const { return (path / "kv").string(); }
};

// Three turns of one chat; `restart`: a new worker for every turn. Returns the turns.
std::vector<Turn> threeTurns(bool restart, const SessionKvTarget& kv) {
    std::vector<Turn> turns;
    std::vector<ChatMessage> conversation;
    std::unique_ptr<EngineWorker> w = loaded();
    for (size_t i = 0; i < kQuestions.size(); ++i) {
        if (restart && i > 0) {
            w.reset(); // the worker joins its thread: the process "quits"
            w = loaded();
        }
        conversation.push_back({"user", kQuestions[i]});
        turns.push_back(runTurn(*w, 10 + i, conversation, kv));
        conversation.push_back({"assistant", turns.back().text});
    }
    return turns;
}

} // namespace

TEST(WorkerSessionKv, RestartAfterEveryTurnContinuesAsIfItNeverStopped) {
    TempDir dir;
    const std::vector<Turn> reference = threeTurns(false, target(dir.kv(), 1));
    const std::vector<Turn> restarted = threeTurns(true, target(dir.kv(), 2));
    const std::vector<Turn> cold = threeTurns(true, SessionKvTarget{}); // nothing persisted
    ASSERT_EQ(reference.size(), 3u);
    const uint64_t rec = recordBytes();
    for (size_t i = 0; i < 3; ++i) {
        SCOPED_TRACE("turn " + std::to_string(i + 1));
        EXPECT_EQ(reference[i].stats.generatedIds.size(), size_t(kAnswerTokens));
        EXPECT_EQ(restarted[i].stats.generatedIds, reference[i].stats.generatedIds);
        EXPECT_EQ(restarted[i].text, reference[i].text);
        EXPECT_EQ(restarted[i].stats.promptTokens, reference[i].stats.promptTokens);
        EXPECT_EQ(restarted[i].stats.reusedTokens, reference[i].stats.reusedTokens);
        EXPECT_EQ(cold[i].stats.generatedIds, reference[i].stats.generatedIds);
        // The file after the turn holds exactly the Session's conversation.
        EXPECT_TRUE(restarted[i].kvEvent);
        EXPECT_EQ(restarted[i].kvBytes,
                  SessionKvFile::kHeaderBytes + heldTokens(restarted[i].stats) * rec);
        EXPECT_TRUE(restarted[i].kvWarning.empty()) << restarted[i].kvWarning;
        EXPECT_TRUE(restarted[i].openWarning.empty()) << restarted[i].openWarning;
        if (i == 0) {
            EXPECT_EQ(restarted[i].stats.reusedTokens, 0);
        } else {
            // Warm: the earlier turns' prompt at least, never read again.
            EXPECT_GE(restarted[i].stats.reusedTokens, reference[i - 1].stats.promptTokens);
            EXPECT_EQ(cold[i].stats.reusedTokens, 0) << "a restart without the file is cold";
        }
    }
    EXPECT_EQ(sessionKvBytes(dir.kv(), 2), restarted[2].kvBytes);
    EXPECT_EQ(sessionKvBytes(dir.kv(), 1), reference[2].kvBytes);
}

TEST(WorkerSessionKv, StoppedTurnIsSavedAndContinuedWarm) {
    TempDir dir;
    const std::vector<ChatMessage> first = {{"user", kQuestions[0]}};
    // Stopped after 10 pieces of a long answer, saved, then a restart and the next turn.
    Turn stopped, next;
    {
        auto w = loaded();
        stopped = runTurn(*w, 10, first, target(dir.kv(), 5), 4000, 10);
    }
    ASSERT_EQ(stopped.stats.stopReason, StopReason::Cancelled);
    ASSERT_GE(stopped.stats.generatedTokens, 10);
    EXPECT_EQ(stopped.kvBytes,
              SessionKvFile::kHeaderBytes + heldTokens(stopped.stats) * recordBytes());
    std::vector<ChatMessage> second = first;
    second.push_back({"assistant", stopped.text});
    second.push_back({"user", kQuestions[1]});
    {
        auto w = loaded();
        next = runTurn(*w, 11, second, target(dir.kv(), 5));
    }
    // The same turn in one worker whose first answer ended at the same token (a token limit
    // leaves the Session as a Stop does: every sampled token but the last run).
    auto w = loaded();
    const Turn same = runTurn(*w, 10, first, target(dir.kv(), 6), stopped.stats.generatedTokens);
    ASSERT_EQ(same.stats.generatedIds, stopped.stats.generatedIds);
    ASSERT_EQ(same.text, stopped.text);
    const Turn reference = runTurn(*w, 11, second, target(dir.kv(), 6));
    EXPECT_EQ(next.stats.generatedIds, reference.stats.generatedIds);
    EXPECT_EQ(next.stats.reusedTokens, reference.stats.reusedTokens);
    EXPECT_GE(next.stats.reusedTokens, stopped.stats.promptTokens);
}

TEST(WorkerSessionKv, ProvisionalKeyAndLateIdentityAreBoundAndSaved) {
    TempDir dir;
    const std::vector<ChatMessage> first = {{"user", kQuestions[0]}};
    auto w = loaded();
    // A chat not yet created in the database: its turn runs under a provisional key, no file.
    const Turn t = runTurn(*w, 10, first, target(dir.kv(), -3));
    EXPECT_FALSE(t.kvEvent);
    EXPECT_FALSE(fs::exists(dir.kv()));
    Command bind{CommandKind::SessionKvBind};
    bind.id = 20;
    bind.kvFrom = -3;
    bind.kv = target(dir.kv(), 11);
    w->post(std::move(bind));
    EngineEvent ev = waitKv(*w, 20);
    EXPECT_EQ(ev.kvSession, 11);
    EXPECT_EQ(ev.kvBytes, SessionKvFile::kHeaderBytes + heldTokens(t.stats) * recordBytes());
    EXPECT_EQ(sessionKvBytes(dir.kv(), 11), ev.kvBytes);
    // A bind for a chat the engine does not hold (a Reset came between) does nothing.
    w->post(Command{CommandKind::Reset});
    Command stale{CommandKind::SessionKvBind};
    stale.id = 21;
    stale.kvFrom = 11;
    stale.kv = target(dir.kv(), 12);
    w->post(std::move(stale));
    // Another chat whose model identity is not known yet: the turn runs, the file comes with
    // the identity (a bind of the same id).
    const Turn u = runTurn(*w, 30, first, target(dir.kv(), 13, ""));
    EXPECT_FALSE(u.kvEvent);
    EXPECT_EQ(sessionKvBytes(dir.kv(), 13), 0u);
    EXPECT_EQ(sessionKvBytes(dir.kv(), 12), 0u) << "a stale bind wrote a file";
    Command late{CommandKind::SessionKvBind};
    late.id = 31;
    late.kvFrom = 13;
    late.kv = target(dir.kv(), 13);
    w->post(std::move(late));
    ev = waitKv(*w, 31);
    EXPECT_EQ(ev.kvBytes, SessionKvFile::kHeaderBytes + heldTokens(u.stats) * recordBytes());
    w.reset();
    // The bound chat continues warm after a restart, as in one worker.
    std::vector<ChatMessage> second = first;
    second.push_back({"assistant", t.text});
    second.push_back({"user", kQuestions[1]});
    auto r = loaded();
    const Turn warm = runTurn(*r, 40, second, target(dir.kv(), 11));
    EXPECT_GE(warm.stats.reusedTokens, t.stats.promptTokens);
    auto one = loaded();
    (void)runTurn(*one, 50, first, target(dir.kv(), 14));
    const Turn reference = runTurn(*one, 51, second, target(dir.kv(), 14));
    EXPECT_EQ(warm.stats.reusedTokens, reference.stats.reusedTokens);
    EXPECT_EQ(warm.stats.generatedIds, reference.stats.generatedIds);
}

TEST(WorkerSessionKv, AnotherModelSetsTheFileAsideDeleteRemovesItAndTheCapHolds) {
    TempDir dir;
    const std::vector<ChatMessage> first = {{"user", kQuestions[0]}};
    Turn t;
    {
        auto w = loaded();
        t = runTurn(*w, 10, first, target(dir.kv(), 7));
    }
    ASSERT_GT(sessionKvBytes(dir.kv(), 7), SessionKvFile::kHeaderBytes);
    std::vector<ChatMessage> second = first;
    second.push_back({"assistant", t.text});
    second.push_back({"user", kQuestions[1]});
    auto w = loaded();
    // Another model (its identity differs): the file is set aside, never applied; a warning.
    const Turn other = runTurn(*w, 11, second, target(dir.kv(), 7, "another-model"));
    EXPECT_EQ(other.stats.reusedTokens, 0);
    EXPECT_NE(other.openWarning.find("set aside"), std::string::npos) << other.openWarning;
    EXPECT_TRUE(fs::exists(sessionKvPath(dir.kv(), 7) + ".old"));
    EXPECT_EQ(other.kvBytes, SessionKvFile::kHeaderBytes + heldTokens(other.stats) * recordBytes());
    // Deleting the chat deletes its file (and the set-aside one).
    Command del{CommandKind::SessionKvDelete};
    del.id = 20;
    del.kv = target(dir.kv(), 7);
    w->post(std::move(del));
    const EngineEvent gone = waitKv(*w, 20);
    EXPECT_EQ(gone.kvSession, 7);
    EXPECT_EQ(gone.kvBytes, 0u);
    EXPECT_TRUE(gone.text.empty()) << gone.text;
    EXPECT_FALSE(fs::exists(sessionKvPath(dir.kv(), 7)));
    EXPECT_FALSE(fs::exists(sessionKvPath(dir.kv(), 7) + ".old"));
    // The cap: two chats' files do not fit; saving the second deletes the first (its text would
    // stay), never the chat being saved.
    w->post(Command{CommandKind::Reset});
    SessionKvTarget a = target(dir.kv(), 8), b = target(dir.kv(), 9);
    const Turn ta = runTurn(*w, 30, first, a);
    ASSERT_GT(ta.kvBytes, SessionKvFile::kHeaderBytes);
    w->post(Command{CommandKind::Reset});
    b.capBytes = ta.kvBytes + 1;
    const Turn tb = runTurn(*w, 31, first, b);
    EXPECT_EQ(tb.kvDeleted, std::vector<int64_t>{8});
    EXPECT_EQ(sessionKvBytes(dir.kv(), 8), 0u);
    EXPECT_EQ(sessionKvBytes(dir.kv(), 9), tb.kvBytes);
}
