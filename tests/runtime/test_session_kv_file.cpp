// The persisted session KV file (runtime/session_kv_file.h): round trips, cut-backs, a file
// truncated at every byte of its last two records, a flipped bit in every field, a full disk in
// the middle of an append, another model's file set aside, and SIGKILLs of a writer process at
// random moments (COLI_KV_KILLS of them, 100 by default; the soak label runs 1,000).
#include "runtime/session_kv_file.h"

#include "runtime/session_kv_dir.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

namespace coli {
namespace {

namespace fs = std::filesystem;

constexpr int kLayers = 3, kMaxTokens = 4096;
const KvShape kShape{2, 5, 3}; // GQA-like: 2 heads of 5 key and 3 value floats

SessionKvKey testKey(const std::string& model = "model-a") {
    return SessionKvKey{model, "checkpoint", kLayers, kShape};
}

size_t floatsPer() {
    return size_t(kLayers) * kShape.heads * (kShape.kDim + kShape.vDim);
}

// A position's rows as a function of (position, token) only, so any prefix can be checked.
std::vector<float> rowsFor(std::span<const int32_t> tokens) {
    std::vector<float> rows(tokens.size() * floatsPer());
    for (size_t p = 0; p < tokens.size(); ++p)
        for (size_t i = 0; i < floatsPer(); ++i)
            rows[p * floatsPer() + i] = float(p) * 1000.0f + float(tokens[p]) + float(i) / 64.0f;
    return rows;
}

KVCache cacheOf(std::span<const int32_t> tokens) {
    KVCache kv;
    const std::vector<float> rows = rowsFor(tokens);
    EXPECT_TRUE(kv.assign(kLayers, kShape, kMaxTokens, rows, int(tokens.size())).isOk());
    return kv;
}

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/coli-kvfile-XXXXXX";
        m_path = ::mkdtemp(tmpl);
    }
    ~TempDir() { fs::remove_all(m_path); }
    std::string file(const std::string& name) const { return m_path + "/" + name; }

private:
    std::string m_path;
};

// Opens, expecting success; returns the state and notes.
SessionKvState openOk(const std::string& path, std::vector<std::string>* notes = nullptr,
                      const SessionKvKey& key = testKey()) {
    SessionKvState st;
    std::vector<std::string> n;
    auto f = SessionKvFile::open(path, key, &st, notes ? notes : &n);
    EXPECT_TRUE(f.isOk()) << f.status().message();
    return st;
}

void save(const std::string& path, std::span<const int32_t> tokens) {
    SessionKvState st;
    std::vector<std::string> notes;
    auto f = SessionKvFile::open(path, testKey(), &st, &notes);
    ASSERT_TRUE(f.isOk()) << f.status().message();
    const KVCache kv = cacheOf(tokens);
    ASSERT_TRUE((*f)->save(tokens, kv).isOk());
}

// The state holds exactly tokens[0..n) and their rows, bit for bit.
void expectPrefix(const SessionKvState& st, std::span<const int32_t> tokens, size_t n) {
    ASSERT_EQ(st.tokens.size(), n);
    EXPECT_TRUE(std::equal(st.tokens.begin(), st.tokens.end(), tokens.begin()));
    const std::vector<float> want = rowsFor(tokens.first(n));
    ASSERT_EQ(st.rows.size(), want.size());
    if (!want.empty()) { // memcmp's pointers must not be null, even for 0 bytes
        EXPECT_EQ(std::memcmp(st.rows.data(), want.data(), want.size() * sizeof(float)), 0);
    }
}

std::vector<int32_t> seq(int n, int base) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        t[size_t(i)] = base + i * 7 % 50;
    return t;
}

TEST(SessionKvFile, SavedTurnsReopenBitForBit) {
    TempDir d;
    const std::string p = d.file("s.kv");
    const auto turn1 = seq(9, 10);
    save(p, turn1);
    auto turn2 = turn1;
    turn2.insert(turn2.end(), {3, 4, 5, 6});
    save(p, turn2);
    expectPrefix(openOk(p), turn2, turn2.size());
    EXPECT_EQ(fs::file_size(p),
              SessionKvFile::kHeaderBytes + turn2.size() * SessionKvFile::recordBytes(testKey()));
}

TEST(SessionKvFile, ADivergingConversationCutsBackToTheCommonPrefix) {
    TempDir d;
    const std::string p = d.file("s.kv");
    const auto a = seq(12, 10);
    save(p, a);
    auto b = std::vector<int32_t>(a.begin(), a.begin() + 6);
    b.insert(b.end(), {90, 91});
    save(p, b);
    expectPrefix(openOk(p), b, b.size());
    save(p, std::vector<int32_t>(b.begin(), b.begin() + 3)); // shorter: cut back only
    expectPrefix(openOk(p), b, 3);
}

// The app keeps a chat's file open across its turns: a rolling-window turn (the prompt's start
// moved, so little is shared, and fewer tokens in all) leaves the file at its new size at once,
// not at the old one until the next open.
TEST(SessionKvFile, AShorterDivergingSaveShrinksTheOpenFile) {
    TempDir d;
    const std::string p = d.file("s.kv");
    SessionKvState st;
    std::vector<std::string> notes;
    auto f = SessionKvFile::open(p, testKey(), &st, &notes);
    ASSERT_TRUE(f.isOk()) << f.status().message();
    const uint64_t record = SessionKvFile::recordBytes(testKey());
    const auto a = seq(12, 10);
    ASSERT_TRUE((*f)->save(a, cacheOf(a)).isOk());
    EXPECT_EQ(fs::file_size(p), SessionKvFile::kHeaderBytes + 12 * record);
    auto b = std::vector<int32_t>(a.begin(), a.begin() + 2);
    b.insert(b.end(), {90, 91, 92, 93, 94});
    ASSERT_TRUE((*f)->save(b, cacheOf(b)).isOk());
    EXPECT_EQ((*f)->fileBytes(), SessionKvFile::kHeaderBytes + b.size() * record);
    EXPECT_EQ(fs::file_size(p), (*f)->fileBytes());
    f->reset(); // unlocks
    expectPrefix(openOk(p), b, b.size());
}

TEST(SessionKvFile, TruncatedAtEveryByteOfTheLastTwoRecordsOpensToTheLastWholeOne) {
    TempDir d;
    const std::string p = d.file("s.kv");
    const auto t = seq(5, 20);
    save(p, t);
    const uint64_t R = SessionKvFile::recordBytes(testKey()), H = SessionKvFile::kHeaderBytes;
    for (uint64_t size = H + 3 * R; size < H + 5 * R; ++size) {
        const std::string c = d.file("cut.kv");
        fs::copy_file(p, c, fs::copy_options::overwrite_existing);
        fs::resize_file(c, size);
        std::vector<std::string> notes;
        SCOPED_TRACE(size);
        expectPrefix(openOk(c, &notes), t, (size - H) / R);
        ASSERT_EQ(notes.size(), 1u);
        EXPECT_NE(notes[0].find("cut back from 5 to"), std::string::npos) << notes[0];
        EXPECT_EQ(fs::file_size(c), H + (size - H) / R * R); // and cut to whole records
    }
}

TEST(SessionKvFile, AFlippedBitInAnyFieldOpensToTheLastGoodRecordOrIsSetAside) {
    TempDir d;
    const std::string p = d.file("s.kv");
    const auto t1 = seq(4, 30);
    auto t2 = t1;
    t2.insert(t2.end(), {1, 2, 3});
    save(p, t1);
    save(p, t2); // count slots: seq 2 -> 4 records, seq 3 -> 7 records
    const uint64_t R = SessionKvFile::recordBytes(testKey()), H = SessionKvFile::kHeaderBytes;
    struct Case {
        const char* field;
        uint64_t offset;
        size_t wantRecords; // SIZE_MAX: set aside
    };
    const size_t aside = SIZE_MAX;
    const Case cases[] = {
        {"magic", 0, aside},
        {"version", 8, aside},
        {"key length", 12, aside},
        {"key", 20, aside},
        {"header checksum", 2040, aside},
        // Slot writes alternate: creation seq 1 at 3584, turn 1 seq 2 at 3072, turn 2 seq 3 at
        // 3584 (seq % 2 picks the slot).
        {"newer count slot", 3584 + 8, 4},
        {"older count slot", 3072 + 8, 7},
        {"record 5 token", H + 5 * R, 5},
        {"record 5 keys", H + 5 * R + 8 + 12, 5},
        {"record 6 checksum", H + 7 * R - 3, 6},
        {"record 0 values", H + 8 + 40, 0},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.field);
        const std::string f = d.file("flip.kv");
        fs::remove(f + ".old");
        fs::copy_file(p, f, fs::copy_options::overwrite_existing);
        {
            std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
            io.seekg(std::streamoff(c.offset));
            char b = 0;
            io.read(&b, 1);
            b ^= 0x10;
            io.seekp(std::streamoff(c.offset));
            io.write(&b, 1);
        }
        std::vector<std::string> notes;
        const SessionKvState st = openOk(f, &notes);
        if (c.wantRecords == aside) {
            EXPECT_TRUE(st.tokens.empty());
            EXPECT_TRUE(fs::exists(f + ".old"));
            ASSERT_EQ(notes.size(), 1u);
            EXPECT_NE(notes[0].find("set aside as " + f + ".old"), std::string::npos) << notes[0];
        } else {
            expectPrefix(st, t2, c.wantRecords);
            EXPECT_FALSE(fs::exists(f + ".old"));
        }
    }
}

TEST(SessionKvFile, AFullDiskDuringAnAppendKeepsEveryEarlierTurn) {
    TempDir d;
    const std::string p = d.file("s.kv");
    const auto t1 = seq(6, 40);
    auto t2 = t1;
    t2.insert(t2.end(), {7, 8, 9, 10, 11});
    const uint64_t R = SessionKvFile::recordBytes(testKey());
    // Fail after every byte count inside the second turn's records and its count slot.
    for (uint64_t budget = 0; budget < 5 * R + 24; budget += 37) {
        SCOPED_TRACE(budget);
        fs::remove(p);
        save(p, t1);
        {
            SessionKvState st;
            std::vector<std::string> notes;
            SessionKvOptions opt;
            opt.failAfterBytes = budget;
            auto f = SessionKvFile::open(p, testKey(), &st, &notes, opt);
            ASSERT_TRUE(f.isOk());
            const KVCache kv = cacheOf(t2);
            const Status s = (*f)->save(t2, kv);
            ASSERT_FALSE(s.isOk());
            EXPECT_EQ(s.code(), ErrorCode::NoSpace);
            EXPECT_EQ(s.message(), "disk full writing " + p);
            EXPECT_EQ((*f)->records(), t1.size());
        }
        expectPrefix(openOk(p), t1, t1.size());
    }
}

TEST(SessionKvFile, AnotherModelsFileIsSetAsideNeverApplied) {
    TempDir d;
    const std::string p = d.file("s.kv");
    save(p, seq(5, 1));
    std::vector<std::string> notes;
    const SessionKvState st = openOk(p, &notes, testKey("model-b"));
    EXPECT_TRUE(st.tokens.empty());
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("another model"), std::string::npos) << notes[0];
    // The set-aside file still holds model-a's conversation.
    expectPrefix(openOk(p + ".old"), seq(5, 1), 5);
}

TEST(SessionKvFile, OneWriterAtATime) {
    TempDir d;
    const std::string p = d.file("s.kv");
    SessionKvState st;
    std::vector<std::string> notes;
    auto first = SessionKvFile::open(p, testKey(), &st, &notes);
    ASSERT_TRUE(first.isOk());
    auto second = SessionKvFile::open(p, testKey(), &st, &notes);
    ASSERT_FALSE(second.isOk());
    EXPECT_NE(second.status().message().find("in use by another process"), std::string::npos);
    first.value().reset(); // closed: free again
    EXPECT_TRUE(SessionKvFile::open(p, testKey(), &st, &notes).isOk());
}

// ---- the folder of KV files (runtime/session_kv_dir.h) ----

TEST(SessionKvDir, TheCapDeletesTheLeastRecentlyWrittenOtherSessionsFiles) {
    TempDir d;
    const std::string dir = d.file("colibri.kv");
    EXPECT_EQ(sessionKvDir(d.file("colibri.db")), dir);
    fs::create_directories(dir);
    const auto t = seq(10, 1);
    for (int64_t id : {1, 2, 3, 4})
        save(sessionKvPath(dir, id), t);
    const uint64_t one = sessionKvBytes(dir, 1);
    ASSERT_GT(one, SessionKvFile::kHeaderBytes);
    // Oldest first: 3, then 1, 4, 2 (by modification time); session 3 is the one kept.
    const auto now = fs::file_time_type::clock::now();
    const int64_t order[] = {3, 1, 4, 2};
    for (int i = 0; i < 4; ++i)
        fs::last_write_time(sessionKvPath(dir, order[i]), now - std::chrono::hours(10 - i));
    fs::copy_file(sessionKvPath(dir, 2), d.file("colibri.kv/notes.txt")); // not a KV file
    auto evicted = enforceSessionKvCap(dir, 2 * one, /*keep=*/3);
    ASSERT_TRUE(evicted.isOk()) << evicted.status().message();
    EXPECT_EQ(*evicted, (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(sessionKvBytes(dir, 1), 0u);
    EXPECT_EQ(sessionKvBytes(dir, 3), one);
    EXPECT_EQ(sessionKvBytes(dir, 2), one);
    EXPECT_TRUE(fs::exists(d.file("colibri.kv/notes.txt")));
    // Under the cap: nothing more; the kept session is never deleted, even over the cap.
    auto again = enforceSessionKvCap(dir, 2 * one, 3);
    EXPECT_TRUE(again.isOk() && again->empty());
    auto all = enforceSessionKvCap(dir, 0, 3);
    EXPECT_TRUE(all.isOk() && *all == std::vector<int64_t>{2});
    EXPECT_EQ(sessionKvBytes(dir, 3), one);
    // Deleting a session deletes its file and a set-aside copy; a missing one is fine.
    fs::copy_file(sessionKvPath(dir, 3), sessionKvPath(dir, 3) + ".old");
    EXPECT_TRUE(removeSessionKv(dir, 3).isOk());
    EXPECT_FALSE(fs::exists(sessionKvPath(dir, 3)));
    EXPECT_FALSE(fs::exists(sessionKvPath(dir, 3) + ".old"));
    EXPECT_TRUE(removeSessionKv(dir, 3).isOk());
    auto none = enforceSessionKvCap(d.file("missing"), 0, 0);
    EXPECT_TRUE(none.isOk() && none->empty());
    const uint64_t cap = defaultSessionKvCap(dir);
    EXPECT_GT(cap, 0u);
    EXPECT_LE(cap, uint64_t(20) << 30);
}

// ---- kills ----

// The writer's conversation: deterministic turns that grow, and now and then diverge.
std::vector<std::vector<int32_t>> writerTurns(uint32_t seed, int n) {
    std::mt19937 rng(seed);
    std::vector<std::vector<int32_t>> turns;
    std::vector<int32_t> cur;
    for (int i = 0; i < n; ++i) {
        if (!cur.empty() && rng() % 4 == 0) cur.resize(rng() % cur.size()); // diverge
        const int add = 1 + int(rng() % 24);
        for (int k = 0; k < add && cur.size() < 2000; ++k)
            cur.push_back(int32_t(rng() % 500));
        turns.push_back(cur);
    }
    return turns;
}

size_t commonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t c = 0;
    while (c < a.size() && c < b.size() && a[c] == b[c])
        ++c;
    return c;
}

TEST(SessionKvFile, KilledWritersLeaveAFileThatOpensToAnAcknowledgedTurn) {
    const char* env = std::getenv("COLI_KV_KILLS");
    const int kills = env ? std::atoi(env) : 100;
    TempDir d;
    const std::string p = d.file("w.kv");
    const auto turns = writerTurns(7, 400);
    std::mt19937 rng(11);
    int bad = 0, inAppend = 0;
    for (int k = 0; k < kills; ++k) {
        fs::remove(p);
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) { // the writer: the real save() code, one byte acknowledged per turn
            ::close(fds[0]);
            SessionKvState st;
            std::vector<std::string> notes;
            auto f = SessionKvFile::open(p, testKey(), &st, &notes);
            if (!f) ::_exit(2);
            for (const auto& t : turns) {
                const KVCache kv = cacheOf(t);
                if (!(*f)->save(t, kv)) ::_exit(3);
                const char ack = 1;
                if (::write(fds[1], &ack, 1) != 1) ::_exit(4);
            }
            ::_exit(0);
        }
        ::close(fds[1]);
        ::usleep(useconds_t(rng() % 40000)); // 0-40 ms: before, inside and between appends
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        int acked = 0;
        char buf[512];
        for (ssize_t r; (r = ::read(fds[0], buf, sizeof buf)) > 0;)
            acked += int(r);
        ::close(fds[0]);
        if (!fs::exists(p)) continue; // killed before it created the file
        std::vector<std::string> notes;
        SessionKvState st;
        auto f = SessionKvFile::open(p, testKey(), &st, &notes);
        if (!f) {
            ++bad;
            ADD_FAILURE() << "kill " << k << ": " << f.status().message();
            continue;
        }
        // The acknowledged turn, or (killed during the next save) its cut-back prefix or the
        // next turn itself.
        const std::vector<int32_t> done =
            acked > 0 ? turns[size_t(acked - 1)] : std::vector<int32_t>{};
        const std::vector<int32_t>& next =
            turns[size_t(std::min<int>(acked, int(turns.size()) - 1))];
        const std::vector<int32_t> cut(done.begin(), done.begin() + long(commonPrefix(done, next)));
        const bool ok = st.tokens == done || st.tokens == next || st.tokens == cut;
        if (st.tokens != done) ++inAppend;
        if (!ok) {
            ++bad;
            ADD_FAILURE() << "kill " << k << ": opened " << st.tokens.size() << " tokens after "
                          << acked << " acknowledged turns";
            continue;
        }
        expectPrefix(st, st.tokens, st.tokens.size()); // every row bit for bit
    }
    std::printf("[ kills ] %d kills, %d failed or wrong loads, %d caught inside a save\n", kills,
                bad, inAppend);
    EXPECT_EQ(bad, 0);
}

} // namespace
} // namespace coli
