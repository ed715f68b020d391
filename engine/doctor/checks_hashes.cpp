// --deep: each file read once and compared with every hash recorded for it: the container
// manifest's SHA-256 (shards, and the side files the converter copied from the source), the
// download receipt's LFS SHA-256 or git blob SHA-1.
#include "convert/file_digest.h"
#include "doctor/doctor_context.h"

#include <filesystem>
#include <map>
#include <sys/stat.h>

namespace coli::doctor::detail {
namespace {

struct Expected {
    std::string sha256, sha256By; // "the manifest", "the download receipt"
    std::string blobSha1;         // from the receipt (non-LFS files)
    bool copiedSource = false;    // a source file the converter copied: edits are allowed
};

std::string shortHex(const std::string& h) {
    return h.substr(0, 16) + "...";
}

} // namespace

Status checkHashes(Context& c) {
    std::map<std::string, Expected> files;
    if (c.container) {
        for (const auto& s : c.container->shards)
            files[s.file] = {s.sha256, "the manifest", "", false};
        // Source files copied as they were (config.json, tokenizer*.json, ...), not the source's
        // weights and index, whose names a container reuses for its own.
        for (const auto& s : c.container->sourceFiles) {
            if (files.count(s.file) || s.file == "model.safetensors.index.json" ||
                std::filesystem::path(s.file).extension() == ".safetensors")
                continue;
            struct stat st {};
            if (::stat(c.path(s.file).c_str(), &st) == 0)
                files[s.file] = {s.sha256, "the manifest (source.files)", "", true};
        }
    }
    if (c.receipt) {
        for (const auto& f : c.receipt->files) {
            Expected& e = files[f.path];
            if (f.isLfs() && e.sha256.empty()) {
                e.sha256 = f.lfsSha256;
                e.sha256By = "the download receipt";
            } else if (!f.isLfs()) {
                e.blobSha1 = f.blobId;
            }
        }
    }
    if (files.empty() && c.report.kind == ModelKind::Container) {
        c.add(Severity::Info, convert::kManifestName,
              "--deep hashed nothing: the manifest, which holds the hashes, cannot be read",
              "see the manifest's finding above");
        return {};
    }
    if (files.empty()) {
        c.add(Severity::Info, "",
              "--deep found nothing to hash against: no " + std::string(convert::kManifestName) +
                  " and no " + hub::kDownloadReceiptName,
              "a model downloaded with coli download (which writes the receipt) or converted "
              "with coli convert can be checked byte by byte");
        return {};
    }
    uint64_t total = 0;
    std::vector<std::pair<std::string, uint64_t>> todo;
    for (const auto& [file, e] : files) {
        struct stat st {};
        if (c.isBroken(file) || ::stat(c.path(file).c_str(), &st) != 0) continue;
        todo.emplace_back(file, uint64_t(st.st_size));
        total += uint64_t(st.st_size);
    }
    uint64_t done = 0;
    for (const auto& [file, size] : todo) {
        const Expected& e = files[file];
        DoctorProgress p{"hashing", file, done, total};
        if (c.progress) c.progress(p);
        auto onBytes = [&](uint64_t n) {
            p.bytesDone += n;
            if (c.progress) c.progress(p);
        };
        convert::DigestRequest what;
        what.sha256 = !e.sha256.empty();
        what.gitBlobSha1 = !e.blobSha1.empty();
        auto d = convert::hashFile(c.path(file), what, onBytes, c.cancel);
        done += size;
        if (!d) {
            if (d.status().code() == ErrorCode::Cancelled)
                return Status(ErrorCode::Cancelled, c.dir + ": doctor cancelled");
            c.add(Severity::Error, file, c.bare(d.status().message(), file),
                  "check the disk (dmesg, smartctl); then " + c.replaceAction(file));
            continue;
        }
        ++c.report.filesHashed;
        c.report.bytesHashed += d->bytes;
        const Severity sev =
            e.copiedSource || !engineReads(file) ? Severity::Warning : Severity::Error;
        if (!e.sha256.empty() && d->sha256 != e.sha256) {
            c.add(sev, file,
                  "SHA-256 " + shortHex(d->sha256) + ", " + e.sha256By + " gives " +
                      shortHex(e.sha256) +
                      (e.copiedSource ? ": the file was changed after the conversion"
                                      : ": the file is damaged or was changed"),
                  e.copiedSource ? "if you did not edit it on purpose, take it from the source "
                                   "checkpoint again"
                                 : c.replaceAction(file));
            continue;
        }
        if (!e.blobSha1.empty() && d->gitBlobSha1 != e.blobSha1)
            c.add(sev, file,
                  "git blob SHA-1 " + shortHex(d->gitBlobSha1) + ", the download receipt gives " +
                      shortHex(e.blobSha1) + ": the file is damaged or was changed",
                  c.replaceAction(file));
    }
    return {};
}

} // namespace coli::doctor::detail
