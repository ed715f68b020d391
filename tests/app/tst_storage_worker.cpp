// The app's storage thread (app/storage_worker.h): jobs in order, a locked database retried with
// nothing lost or reordered, a damaged file reported and left untouched, shutdown waits for the
// writes still queued, acknowledgements after each committed message write.
#include "storage_worker.h"

#include "../storage/storage_test_util.h"
#include "convert/sha256.h"
#include "storage/sessions.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace coli;
using namespace coli::app;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Events {
    std::mutex m;
    std::vector<StorageEvent> all;
    void operator()(StorageEvent e) {
        std::lock_guard lock(m);
        all.push_back(std::move(e));
    }
    std::vector<StorageEvent> take() {
        std::lock_guard lock(m);
        return all;
    }
};

fs::path tempDir(const std::string& name) {
    fs::path d = fs::temp_directory_path() /
                 ("coli-storage-worker-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

// Appends a user message with `text` at `position` of the session bound to `sessionKey`.
StorageWorker::Job appendJob(int64_t sessionKey, int position, std::string text) {
    return [=](StorageContext& ctx) -> Status {
        storage::MessageRecord m;
        m.session = ctx.resolve(sessionKey);
        m.position = position;
        m.text = text;
        auto id = ctx.sessions().appendMessage(m);
        if (!id) return id.status();
        ctx.ack(*id, text);
        return Status::ok();
    };
}

StorageWorker::Job createJob(int64_t key, std::string title) {
    return [=](StorageContext& ctx) -> Status {
        storage::SessionInfo s;
        s.title = title;
        auto id = ctx.sessions().createSession(s);
        if (!id) return id.status();
        ctx.bind(key, *id);
        return Status::ok();
    };
}

std::vector<std::string> texts(const fs::path& db) {
    auto st = storage::Storage::open(db.string());
    EXPECT_TRUE(st.isOk());
    if (!st) return {};
    storage::SessionStore ss(*st.value());
    auto list = ss.listSessions();
    EXPECT_TRUE(list.isOk());
    std::vector<std::string> out;
    if (!list) return out;
    for (const auto& s : list.value()) {
        auto messages = ss.loadMessages(s.id); // kept alive for the loop (not a temporary)
        EXPECT_TRUE(messages.isOk());
        if (!messages) continue;
        for (const auto& m : messages.value())
            out.push_back(m.text);
    }
    return out;
}

} // namespace

TEST(StorageWorker, JobsRunInOrderWithProvisionalKeys) {
    const fs::path dir = tempDir("order");
    Events ev;
    StorageWorker w({.path = (dir / "c.db").string()}, std::ref(ev));
    const int64_t key = w.newKey();
    EXPECT_LT(key, 0);
    w.post("creating", createJob(key, "first"));
    for (int i = 0; i < 50; ++i)
        w.post("appending", appendJob(key, i, std::string("m").append(std::to_string(i))));
    EXPECT_EQ(w.shutdown(), 0u);
    const auto got = texts(dir / "c.db");
    ASSERT_EQ(got.size(), 50u);
    for (int i = 0; i < 50; ++i)
        EXPECT_EQ(got[size_t(i)], std::string("m").append(std::to_string(i)));
    const auto events = ev.take();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().kind, StorageEvent::Kind::Opened);
    fs::remove_all(dir);
}

TEST(StorageWorker, ALockedDatabaseIsRetriedAndNothingIsLostOrReordered) {
    const fs::path dir = tempDir("locked");
    const std::string path = (dir / "c.db").string();
    { ASSERT_TRUE(storage::Storage::open(path).isOk()); } // created at the current schema
    Events ev;
    StorageWorker w({.path = path, .retryInterval = 20ms, .busyTimeout = 50ms}, std::ref(ev));
    const int64_t key = w.newKey();
    w.post("creating", createJob(key, "locked"));
    w.post("appending", appendJob(key, 0, "before"));
    // Another process's writer holds the lock while the app keeps saving.
    while (w.pending() > 0)
        std::this_thread::sleep_for(1ms);
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    sqlite3_busy_timeout(other, 10000); // the worker may still be finishing the last job
    ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    for (int i = 1; i <= 20; ++i)
        w.post("appending", appendJob(key, i, "while locked " + std::to_string(i)));
    std::this_thread::sleep_for(400ms); // several retries happen meanwhile
    EXPECT_GT(w.pending(), 0u) << "the writes must wait, not be dropped";
    ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(other);
    EXPECT_EQ(w.shutdown(), 0u);
    const auto got = texts(dir / "c.db");
    ASSERT_EQ(got.size(), 21u);
    EXPECT_EQ(got[0], "before");
    for (int i = 1; i <= 20; ++i)
        EXPECT_EQ(got[size_t(i)], "while locked " + std::to_string(i));
    for (const auto& e : ev.take())
        EXPECT_NE(e.kind, StorageEvent::Kind::Failed) << e.text;
    fs::remove_all(dir);
}

TEST(StorageWorker, ADamagedFileIsReportedAndLeftUntouched) {
    const fs::path dir = tempDir("damaged");
    const fs::path path = dir / "c.db";
    const std::string garbage(10000, '\x5a');
    std::ofstream(path, std::ios::binary) << garbage;
    Events ev;
    {
        StorageWorker w({.path = path.string()}, std::ref(ev));
        const int64_t key = w.newKey();
        w.post("creating", createJob(key, "lost"));
        w.post("appending", appendJob(key, 0, "not saved"));
        EXPECT_EQ(w.shutdown(), 0u);
        EXPECT_FALSE(w.available());
    }
    const auto events = ev.take();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().kind, StorageEvent::Kind::Unavailable);
    EXPECT_NE(events.front().text.find(path.string()), std::string::npos) << events.front().text;
    std::ifstream in(path, std::ios::binary);
    const std::string after((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(after, garbage);
    EXPECT_FALSE(fs::exists(path.string() + "-wal"));
    fs::remove_all(dir);
}

TEST(StorageWorker, AFailedJobIsReportedOnceAndLaterJobsRun) {
    const fs::path dir = tempDir("failed");
    Events ev;
    StorageWorker w({.path = (dir / "c.db").string()}, std::ref(ev));
    const int64_t key = w.newKey();
    w.post("creating", createJob(key, "s"));
    w.post("appending to a missing session", appendJob(12345, 0, "x"));
    w.post("appending to a missing session", appendJob(12345, 0, "x"));
    w.post("appending", appendJob(key, 0, "kept"));
    EXPECT_EQ(w.shutdown(), 0u);
    int failed = 0;
    for (const auto& e : ev.take())
        if (e.kind == StorageEvent::Kind::Failed) {
            ++failed;
            EXPECT_NE(e.text.find("appending to a missing session"), std::string::npos);
        }
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(texts(dir / "c.db"), std::vector<std::string>{"kept"});
    fs::remove_all(dir);
}

TEST(StorageWorker, AcknowledgesEachCommittedMessageWrite) {
    const fs::path dir = tempDir("ack");
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    {
        StorageWorker w({.path = (dir / "c.db").string(), .ackFd = fds[1]}, nullptr);
        const int64_t key = w.newKey();
        w.post("creating", createJob(key, "s"));
        w.post("appending", appendJob(key, 0, "héllo"));
        EXPECT_EQ(w.shutdown(), 0u);
    }
    ::close(fds[1]);
    std::string got;
    char buf[256];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        got.append(buf, size_t(n));
    ::close(fds[0]);
    convert::Sha256 h;
    const std::string text = "héllo";
    h.update(text.data(), text.size());
    EXPECT_EQ(got, "ack 1 " + h.finishHex() + "\n");
    fs::remove_all(dir);
}

// A read-only database (run as an unprivileged user: root ignores permission bits): one
// "not saved" report naming the file and saying why, the jobs dropped, the file untouched.
TEST(StorageWorker, AReadOnlyFileIsReportedAndUntouched) {
    const fs::path dir = tempDir("readonly");
    storage_test::makeReachable(dir);
    const fs::path path = dir / "c.db";
    { ASSERT_TRUE(storage::Storage::open(path.string()).isOk()); }
    fs::remove(path.string() + "-wal");
    fs::remove(path.string() + "-shm");
    ::chmod(path.c_str(), 0444);
    std::ifstream in(path, std::ios::binary);
    const std::string before((std::istreambuf_iterator<char>(in)), {});
    const std::string r = storage_test::runUnprivileged([&]() -> std::string {
        Events ev;
        {
            StorageWorker w({.path = path.string()}, std::ref(ev));
            const int64_t key = w.newKey();
            w.post("creating", createJob(key, "not saved"));
            w.shutdown();
            if (w.available()) return "the worker says a read-only file is available";
        }
        const auto events = ev.take();
        if (events.empty() || events.front().kind != StorageEvent::Kind::Unavailable)
            return "no Unavailable report";
        const std::string& text = events.front().text;
        if (text.find(path.string()) == std::string::npos ||
            text.find("read-only") == std::string::npos)
            return "the report does not name the file and the problem: " + text;
        return "";
    });
    EXPECT_EQ(r, "");
    std::ifstream again(path, std::ios::binary);
    const std::string after((std::istreambuf_iterator<char>(again)), {});
    EXPECT_EQ(after, before);
    ::chmod(path.c_str(), 0644);
    fs::remove_all(dir);
}
