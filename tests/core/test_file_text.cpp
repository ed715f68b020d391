// core/file_text.h and core/regular_file.h on hostile paths: a named pipe (which would block
// open() forever), a directory, a device, symbolic link loops and dangling links, a file far too
// large (sparse: no disk space needed). Each refusal names the file and the problem; none blocks
// (CTest TIMEOUT 30 s catches a regression that hangs).
#include "core/file_text.h"
#include "core/regular_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace coli;
namespace fs = std::filesystem;

namespace {

class FileText : public ::testing::Test {
protected:
    void SetUp() override {
        m_dir = fs::path(COLI_BINARY_DIR) / "test-tmp" /
                ("file-text-" + std::to_string(getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }
    std::string path(const std::string& name) const { return (m_dir / name).string(); }
    fs::path m_dir;
};

void expectMessage(const Status& s, const std::string& a, const std::string& b) {
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find(a), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(b), std::string::npos) << s.message();
}

} // namespace

TEST_F(FileText, ReadsARegularFile) {
    std::ofstream(path("a.json")) << "{\"x\": 1}";
    auto t = readTextFile(path("a.json"));
    ASSERT_TRUE(t.isOk()) << t.status().message();
    EXPECT_EQ(t.value(), "{\"x\": 1}");
    auto o = readOptionalFile(path("a.json"));
    ASSERT_TRUE(o.isOk());
    ASSERT_TRUE(o.value().has_value());
    EXPECT_EQ(*o.value(), "{\"x\": 1}");
}

TEST_F(FileText, NamedPipeIsRefusedAtOnce) {
    ASSERT_EQ(::mkfifo(path("config.json").c_str(), 0600), 0);
    auto t = readTextFile(path("config.json"));
    expectMessage(t.status(), path("config.json"), "not a regular file (a named pipe)");
    auto o = readOptionalFile(path("config.json"));
    expectMessage(o.status(), path("config.json"), "a named pipe");
    auto fd = openRegularFile(path("config.json"));
    expectMessage(fd.status(), "config.json", "a named pipe");
}

TEST_F(FileText, DirectoryAndDeviceAreRefused) {
    fs::create_directory(path("tokenizer.json"));
    expectMessage(readTextFile(path("tokenizer.json")).status(), "tokenizer.json", "a directory");
    expectMessage(readTextFile("/dev/zero").status(), "/dev/zero", "a character device");
}

TEST_F(FileText, SymbolicLinkLoopNamesTheFile) {
    fs::create_symlink("b.json", path("a.json"));
    fs::create_symlink("a.json", path("b.json"));
    for (const auto& s :
         {readTextFile(path("a.json")).status(), readOptionalFile(path("a.json")).status()})
        expectMessage(s, path("a.json"), "symbolic link loop");
}

TEST_F(FileText, DanglingSymbolicLinkNamesFileAndTarget) {
    fs::create_symlink("gone.json", path("config.json"));
    auto t = readTextFile(path("config.json"));
    expectMessage(t.status(), path("config.json"), "dangling symbolic link");
    EXPECT_NE(t.status().message().find("gone.json"), std::string::npos);
    EXPECT_EQ(t.status().code(), ErrorCode::NotFound);
    // Not "absent": an optional file that is a broken link is an error, not silently skipped.
    expectMessage(readOptionalFile(path("config.json")).status(), "config.json", "dangling");
}

TEST_F(FileText, MissingFile) {
    auto t = readTextFile(path("nope.json"));
    expectMessage(t.status(), path("nope.json"), "file not found");
    EXPECT_EQ(t.status().code(), ErrorCode::NotFound);
    auto o = readOptionalFile(path("nope.json"));
    ASSERT_TRUE(o.isOk());
    EXPECT_FALSE(o.value().has_value());
}

TEST_F(FileText, EmptyOptionalFileIsNotAbsent) {
    std::ofstream(path("empty.json")).flush();
    auto o = readOptionalFile(path("empty.json"));
    ASSERT_TRUE(o.isOk());
    ASSERT_TRUE(o.value().has_value());
    EXPECT_EQ(*o.value(), "");
}

TEST_F(FileText, HugeFileIsRefusedFromItsSizeWithoutReading) {
    // 20 GB, sparse: refused from fstat before a byte is read (else this test would take minutes
    // and 20 GB of memory).
    { std::ofstream(path("tokenizer.json")).flush(); }
    fs::resize_file(path("tokenizer.json"), uint64_t(20) << 30);
    auto t = readTextFile(path("tokenizer.json"));
    expectMessage(t.status(), path("tokenizer.json"), "over the 256 MiB limit");
    EXPECT_EQ(t.status().code(), ErrorCode::Malformed);
    // The limit is per call, and named in the message.
    std::ofstream(path("small.json")) << std::string(2000, ' ');
    expectMessage(readTextFile(path("small.json"), 1024).status(), "small.json", "limit");
    EXPECT_TRUE(readTextFile(path("small.json"), 2000).isOk());
}
