// The FileSystem layer's append operation (a resumed download's .part) and the fault-injecting
// FileSystem counting appended bytes against the same "disk".
#include "convert/file_layer.h"
#include "st_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace coli::convert {
namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(FileLayer, OpenAppendContinuesAnExistingFileAndCreatesAMissingOne) {
    st_test::TempDir tmp;
    const std::string path = (tmp.path() / "a.part").string();
    st_test::writeText(path, "hello ");
    auto f = posixFileSystem().openAppend(path);
    ASSERT_TRUE(f) << f.status().toString();
    ASSERT_TRUE(f.value()->write("world", 5));
    ASSERT_TRUE(f.value()->sync());
    ASSERT_TRUE(f.value()->close());
    EXPECT_EQ(slurp(path), "hello world");

    const std::string fresh = (tmp.path() / "b.part").string();
    auto g = posixFileSystem().openAppend(fresh);
    ASSERT_TRUE(g) << g.status().toString();
    ASSERT_TRUE(g.value()->write("x", 1));
    ASSERT_TRUE(g.value()->close());
    EXPECT_EQ(slurp(fresh), "x");

    auto bad = posixFileSystem().openAppend((tmp.path() / "no" / "such" / "dir").string());
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.status().code(), ErrorCode::Io);
    EXPECT_NE(bad.status().message().find("no/such/dir"), std::string::npos);
}

TEST(FileLayer, FaultyFileSystemCountsAppendedBytesAgainstTheBudget) {
    st_test::TempDir tmp;
    const std::string path = (tmp.path() / "a.part").string();
    FaultyFileSystem disk(posixFileSystem(), 8);
    {
        auto f = disk.create(path);
        ASSERT_TRUE(f);
        ASSERT_TRUE(f.value()->write("12345", 5));
    }
    auto f = disk.openAppend(path);
    ASSERT_TRUE(f);
    const Status s = f.value()->write("67890", 5);
    EXPECT_EQ(s.code(), ErrorCode::NoSpace);
    EXPECT_NE(s.message().find("disk full writing " + path), std::string::npos) << s.message();
    EXPECT_TRUE(f.value()->close());    // the bytes that fitted are flushed and closed cleanly
    EXPECT_EQ(slurp(path), "12345678"); // what fitted is kept
    EXPECT_EQ(disk.bytesWritten(), 8u);
    ASSERT_EQ(disk.appended().size(), 1u);
    EXPECT_EQ(disk.appended()[0], path);
}

} // namespace
} // namespace coli::convert
