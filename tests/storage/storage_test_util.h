#pragma once
// Helpers for the storage tests: temp folders, raw sqlite3 connections (a "second program"),
// file bytes, and running a check as an unprivileged user (permission bits do not bind root).
#include "st_writer.h" // st_test::TempDir

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace storage_test {

using st_test::TempDir;

inline std::vector<char> fileBytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void writeBytes(const std::filesystem::path& p, const std::vector<char>& b) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(b.data(), std::streamsize(b.size()));
}

// A raw connection, as another program (sqlite3 CLI, a second Colibri) would hold it.
class RawDb {
public:
    explicit RawDb(const std::string& path,
                   int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
        m_rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    }
    ~RawDb() { sqlite3_close_v2(m_db); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;
    bool ok() const { return m_rc == SQLITE_OK; }
    sqlite3* get() const { return m_db; }
    // sqlite3_exec's result code; the message goes to *err when given.
    int exec(const std::string& sql, std::string* err = nullptr) {
        char* msg = nullptr;
        const int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &msg);
        if (err) *err = msg ? msg : "";
        sqlite3_free(msg);
        return rc;
    }
    int64_t queryInt(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        int64_t v = -1;
        if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return v;
    }

private:
    sqlite3* m_db = nullptr;
    int m_rc = SQLITE_ERROR;
};

// Runs `check` where file permission bits apply: directly for an ordinary user; for root, in a
// forked child that drops to uid/gid 65534 (nobody) first. `check` returns an empty string on
// success, else what went wrong (reported by the parent). Paths it uses must be reachable by
// that user (see makeReachable).
inline std::string runUnprivileged(const std::function<std::string()>& check) {
    if (geteuid() != 0) return check();
    int fds[2];
    if (pipe(fds) != 0) return "pipe failed";
    const pid_t pid = fork();
    if (pid < 0) return "fork failed";
    if (pid == 0) {
        close(fds[0]);
        std::string r;
        if (setgid(65534) != 0 || setuid(65534) != 0)
            r = "cannot drop to uid 65534";
        else
            r = check();
        if (write(fds[1], r.data(), r.size()) < 0) _exit(3);
        close(fds[1]);
        _exit(r.empty() ? 0 : 1);
    }
    close(fds[1]);
    std::string out;
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        out.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) return "child crashed: " + out;
    if (WEXITSTATUS(status) != 0 && out.empty()) return "child failed";
    return out;
}

// Lets uid 65534 traverse `dir` and its parents up to the temp folder (for runUnprivileged).
inline void makeReachable(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    for (fs::path p = dir; p.has_parent_path() && p != p.parent_path(); p = p.parent_path()) {
        std::error_code ec;
        fs::permissions(p, fs::perms::others_exec, fs::perm_options::add, ec);
        if (p == fs::temp_directory_path()) break;
    }
}

} // namespace storage_test
