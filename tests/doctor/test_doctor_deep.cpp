// coli doctor --deep against a download receipt (colibri-download.json): LFS files by SHA-256,
// the others by git blob SHA-1; and the digests themselves against known values.
#include "convert/file_digest.h"
#include "doctor_test_util.h"
#include "hub/download_receipt.h"

#include <atomic>
#include <sys/stat.h>

using namespace doctor_test;
using coli::ErrorCode;

namespace {

// Known digests: `printf 'hello\n' | sha256sum`, `printf 'hello\n' | git hash-object --stdin`,
// and those of the empty file.
TEST(DoctorHash, KnownDigests) {
    st_test::TempDir t;
    writeAll(t.path() / "hello", "hello\n");
    writeAll(t.path() / "empty", "");
    auto h = coli::convert::hashFile(t.file("hello"), {true, true});
    ASSERT_TRUE(h.isOk()) << h.status().toString();
    EXPECT_EQ(h->sha256, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    EXPECT_EQ(h->gitBlobSha1, "ce013625030ba8dba906f756967f9e9ca394464a");
    EXPECT_EQ(h->bytes, 6u);
    h = coli::convert::hashFile(t.file("empty"), {true, true});
    ASSERT_TRUE(h.isOk());
    EXPECT_EQ(h->sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(h->gitBlobSha1, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    h = coli::convert::hashFile(t.file("hello"), {false, true});
    ASSERT_TRUE(h.isOk());
    EXPECT_EQ(h->sha256, "");
    EXPECT_EQ(h->gitBlobSha1, "ce013625030ba8dba906f756967f9e9ca394464a");
    EXPECT_EQ(coli::convert::hashFile(t.file("absent"), {true, false}).status().code(),
              ErrorCode::NotFound);
}

// A downloaded model: the fixture plus a README, and the receipt the downloader would write
// (weights as LFS files with their SHA-256, the rest by git blob id).
fs::path downloaded(const st_test::TempDir& t, const std::string& family) {
    const fs::path d = t.path() / "model";
    copyDir(fixture(family), d);
    writeAll(d / "README.md", "# a model\n");
    coli::hub::DownloadReceipt rec;
    rec.endpoint = "https://huggingface.co";
    rec.repo = "test-owner/tiny-" + family;
    rec.revision = "main";
    rec.commit = std::string(40, 'a');
    rec.completedMs = 1764633600000;
    for (const auto& e : fs::directory_iterator(d)) {
        const std::string name = e.path().filename().string();
        auto h = coli::convert::hashFile(e.path().string(), {true, true});
        EXPECT_TRUE(h.isOk());
        coli::hub::RepoFile f;
        f.path = name;
        f.size = h->bytes;
        f.blobId = h->gitBlobSha1;
        if (e.path().extension() == ".safetensors") {
            f.lfsSha256 = h->sha256;
            f.blobId = std::string(40, 'b'); // the LFS pointer's id, not the object's
        }
        rec.files.push_back(f);
    }
    EXPECT_TRUE(coli::hub::writeDownloadReceipt(d.string(), rec).isOk());
    return d;
}

} // namespace

TEST(DoctorDeep, DownloadedModelIsReady) {
    st_test::TempDir t;
    const fs::path d = downloaded(t, "mixtral");
    const DoctorReport r = diagnose(d, true);
    EXPECT_TRUE(r.ready) << describe(r);
    EXPECT_TRUE(r.findings.empty()) << describe(r);
    int files = 0;
    for (const auto& e : fs::directory_iterator(d))
        files += e.path().filename() != "colibri-download.json";
    EXPECT_EQ(r.filesHashed, files);
}

TEST(DoctorDeep, AlteredByteInAnLfsFile) {
    st_test::TempDir t;
    const fs::path d = downloaded(t, "mixtral");
    const std::string name = "model-00002-of-00003.safetensors";
    flipByte(d / name, fs::file_size(d / name) - 10); // in the last tensor's data
    DoctorReport r = diagnose(d);
    EXPECT_TRUE(r.ready) << describe(r); // sizes and headers are as they were
    r = diagnose(d, true);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
    const Finding* f = only(r, Severity::Error, name);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "SHA-256")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "the download receipt gives")) << f->problem;
    EXPECT_TRUE(contains(f->action, "coli download test-owner/tiny-mixtral --revision " +
                                        std::string(40, 'a') + " --include '" + name + "'"))
        << f->action;
}

TEST(DoctorDeep, AlteredByteInAGitFile) {
    st_test::TempDir t;
    const fs::path d = downloaded(t, "mixtral");
    // Indentation: still the same JSON, the same size, another file.
    replaceText(d / "config.json", "  \"architectures\"", " \t\"architectures\"");
    EXPECT_TRUE(diagnose(d).ready);
    const DoctorReport r = diagnose(d, true);
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "git blob SHA-1")) << f->problem;
}

TEST(DoctorDeep, ReceiptSizesAreCheckedWithoutDeep) {
    st_test::TempDir t;
    const fs::path d = downloaded(t, "olmoe");
    const uint64_t size = fs::file_size(d / "tokenizer.json");
    fs::resize_file(d / "tokenizer.json", size / 2);
    fs::remove(d / "README.md");
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r); // one finding per broken file
    const Finding* f = only(r, Severity::Error, "tokenizer.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, withCommas(size / 2) +
                                         " bytes, the download receipt expects " +
                                         withCommas(size) + ": the file is incomplete"))
        << f->problem;
    EXPECT_TRUE(contains(f->action, "coli download test-owner/tiny-olmoe")) << f->action;
    // A file the engine does not read is worth a warning only.
    f = only(r, Severity::Warning, "README.md");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "but missing")) << f->problem;
}

TEST(DoctorDeep, NothingToHashAgainstIsSaid) {
    const DoctorReport r = diagnose(fixture("olmoe"), true);
    EXPECT_TRUE(r.ready);
    const Finding* f = only(r, Severity::Info, "");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "nothing to hash against")) << f->problem;
    EXPECT_EQ(r.filesHashed, 0);
}

TEST(DoctorDeep, ProgressAndCancelWhileHashing) {
    st_test::TempDir t;
    const fs::path d = downloaded(t, "mixtral");
    coli::doctor::DoctorOptions o;
    o.deep = true;
    o.measureBandwidth = false;
    std::atomic<bool> cancel{false};
    uint64_t total = 0, last = 0;
    auto r = coli::doctor::diagnoseModel(
        d.string(), o,
        [&](const coli::doctor::DoctorProgress& p) {
            if (p.stage != "hashing") return;
            EXPECT_GE(p.bytesDone, last);
            last = p.bytesDone;
            total = p.bytesTotal;
            if (p.bytesDone > 0) cancel = true; // after the first piece
        },
        &cancel);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
    EXPECT_GT(total, 0u);
    EXPECT_LT(last, total);
}

// A receipt that cannot be read is a warning (the model may still be fine), and a named pipe in
// its place is refused, never waited on.
TEST(DoctorDeep, UnreadableReceiptIsAWarning) {
    st_test::TempDir t;
    const fs::path d = t.path() / "model";
    copyDir(fixture("olmoe"), d);
    writeAll(d / "colibri-download.json", "{\"format\": \"something else\"}");
    DoctorReport r = diagnose(d, true);
    EXPECT_TRUE(r.ready) << describe(r);
    const Finding* f = only(r, Severity::Warning, "colibri-download.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "colibri-download")) << f->problem;

    fs::remove(d / "colibri-download.json");
    ASSERT_EQ(::mkfifo((d / "colibri-download.json").c_str(), 0600), 0);
    r = diagnose(d, true);
    EXPECT_TRUE(r.ready) << describe(r);
    f = only(r, Severity::Warning, "colibri-download.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "named pipe")) << f->problem;
}
