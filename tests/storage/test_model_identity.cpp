// Model identity: a checkpoint and the container converted from it share one identity (so they
// share learned heat); another model, or changed weights, get another.
#include "convert/converter.h"
#include "storage/database.h"
#include "storage/model_identity.h"
#include "storage_test_util.h"

#include <fcntl.h>
#include <filesystem>
#include <map>
#include <sys/stat.h>

using namespace coli::storage;
using storage_test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& family) {
    return std::string(COLI_FIXTURE_DIR) + "/" + family;
}

void copyDir(const fs::path& from, const fs::path& to) {
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(from))
        fs::copy_file(e.path(), to / e.path().filename());
}

// An in-memory FileHashCache that counts what it is asked.
struct CountingCache : FileHashCache {
    std::map<std::string, std::pair<FileStamp, std::string>> entries;
    int hits = 0, misses = 0, stores = 0;
    std::optional<std::string> findHash(const FileStamp& s) override {
        auto it = entries.find(s.path);
        if (it != entries.end() && it->second.first.bytes == s.bytes &&
            it->second.first.mtimeNs == s.mtimeNs) {
            ++hits;
            return it->second.second;
        }
        ++misses;
        return std::nullopt;
    }
    void rememberHash(const FileStamp& s, const std::string& h) override {
        ++stores;
        entries[s.path] = {s, h};
    }
};

} // namespace

TEST(ModelIdentity, CanonicalTextAndOrderIndependence) {
    // Expected value: Python's hashlib.sha256 of the canonical text documented in
    // model_identity.h ("colibri-model-identity 1\n13:a.safetensors 10 abab...\n13:b...").
    std::string ha, hc;
    for (int i = 0; i < 32; ++i)
        ha += "ab", hc += "cd";
    const std::vector<SourceShard> shards = {{"b.safetensors", 20, hc}, {"a.safetensors", 10, ha}};
    EXPECT_EQ(identityFromShards(shards),
              "e0f3d515eafe1222832b0fa888cd0da1f5b27719fb7ae3f7956bbbda6879c716");
    EXPECT_EQ(identityFromShards({shards[1], shards[0]}), identityFromShards(shards));
    auto changed = shards;
    changed[0].bytes = 21;
    EXPECT_NE(identityFromShards(changed), identityFromShards(shards));
    changed = shards;
    changed[1].file = "c.safetensors";
    EXPECT_NE(identityFromShards(changed), identityFromShards(shards));
    changed = shards;
    changed[1].sha256[0] = 'f';
    EXPECT_NE(identityFromShards(changed), identityFromShards(shards));
}

TEST(ModelIdentity, ContainerWithoutSourceShardsIsMalformed) {
    coli::convert::Container c;
    c.dir = "/x/model.colibri";
    c.sourceFiles = {{"config.json", 10, std::string(64, '0')}};
    auto id = containerIdentity(c);
    ASSERT_FALSE(id.isOk());
    EXPECT_EQ(id.status().code(), coli::ErrorCode::Malformed);
    EXPECT_NE(id.status().message().find("/x/model.colibri/colibri.json"), std::string::npos);
    // Side files never count: adding them changes nothing.
    c.sourceFiles.push_back({"model.safetensors", 5, std::string(64, '1')});
    const std::string one = containerIdentity(c).value();
    c.sourceFiles.push_back({"tokenizer.json", 7, std::string(64, '2')});
    c.sourceFiles.push_back({"model.safetensors.index.json", 7, std::string(64, '3')});
    EXPECT_EQ(containerIdentity(c).value(), one);
}

TEST(ModelIdentity, ContainerAndItsSourceShareOneIdentityOtherModelsDoNot) {
    if (!fs::exists(fixture("mixtral") + "/config.json"))
        GTEST_SKIP() << "fixture checkpoints missing in " << COLI_FIXTURE_DIR
                     << " (run the fixtures_generate test)";
    TempDir t;
    const fs::path src = t.path() / "mixtral";
    copyDir(fixture("mixtral"), src); // three shards and an index
    CountingCache cache;
    auto fromCheckpoint = modelIdentity(src.string(), &cache);
    ASSERT_TRUE(fromCheckpoint.isOk()) << fromCheckpoint.status().toString();
    EXPECT_EQ(cache.misses, 3);
    EXPECT_EQ(cache.stores, 3);

    for (const char* experts : {"int4-g64", "int8-g64"}) {
        coli::convert::ConvertOptions opt;
        if (std::string(experts) == "int8-g64")
            opt.plan.experts = coli::convert::StoredFormat::Q8_G64;
        const fs::path dst = t.path() / (std::string("mixtral-") + experts + ".colibri");
        auto rep = coli::convert::convertCheckpoint(src.string(), dst.string(), opt);
        ASSERT_TRUE(rep.isOk()) << rep.status().toString();
        auto fromContainer = modelIdentity(dst.string(), nullptr);
        ASSERT_TRUE(fromContainer.isOk()) << fromContainer.status().toString();
        EXPECT_EQ(fromContainer.value(), fromCheckpoint.value()) << experts;
    }

    // A second look at the checkpoint takes every digest from the cache.
    auto again = modelIdentity(src.string(), &cache);
    ASSERT_TRUE(again.isOk());
    EXPECT_EQ(again.value(), fromCheckpoint.value());
    EXPECT_EQ(cache.hits, 3);
    EXPECT_EQ(cache.stores, 3);

    // Another model has another identity, with or without a cache.
    auto granite = modelIdentity(fixture("granitemoe"), nullptr);
    ASSERT_TRUE(granite.isOk()) << granite.status().toString();
    EXPECT_NE(granite.value(), fromCheckpoint.value());

    // Changed weights (same size, new mtime): the stale digest is not used; the identity moves.
    const fs::path shard = src / "model-00003-of-00003.safetensors";
    auto bytes = storage_test::fileBytes(shard);
    bytes[bytes.size() - 1] = char(bytes[bytes.size() - 1] ^ 0x01); // last byte of tensor data
    storage_test::writeBytes(shard, bytes);
    struct timespec times[2] = {{0, UTIME_NOW}, {1000000000, 0}}; // a distinct mtime
    ASSERT_EQ(::utimensat(AT_FDCWD, shard.c_str(), times, 0), 0);
    auto changed = modelIdentity(src.string(), &cache);
    ASSERT_TRUE(changed.isOk()) << changed.status().toString();
    EXPECT_NE(changed.value(), fromCheckpoint.value());
    EXPECT_EQ(changed.value(), modelIdentity(src.string(), nullptr).value());
}

TEST(ModelIdentity, DatabaseIsTheHashCache) {
    if (!fs::exists(fixture("olmoe") + "/config.json"))
        GTEST_SKIP() << "fixture checkpoints missing in " << COLI_FIXTURE_DIR;
    TempDir t;
    auto db = Storage::open(t.file("colibri.db"));
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    const std::string dir = fixture("olmoe");
    auto first = modelIdentity(dir, db.value().get());
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    EXPECT_EQ(first.value(), modelIdentity(dir, nullptr).value());
    storage_test::RawDb raw(t.file("colibri.db"));
    EXPECT_GE(raw.queryInt("SELECT count(*) FROM file_hashes"), 1);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM file_hashes WHERE length(sha256) = 64"),
              raw.queryInt("SELECT count(*) FROM file_hashes"));
    EXPECT_EQ(modelIdentity(dir, db.value().get()).value(), first.value());
}
