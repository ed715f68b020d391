#include "doctor/doctor.h"

#include "convert/converter.h"
#include "convert/manifest.h"
#include "core/regular_file.h"
#include "doctor/doctor_context.h"

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace coli::doctor {

namespace fs = std::filesystem;

const char* severityName(Severity s) {
    switch (s) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Info:
        return "info";
    }
    return "?";
}

const char* modelKindName(ModelKind k) {
    switch (k) {
    case ModelKind::Unknown:
        return "no model";
    case ModelKind::Checkpoint:
        return "Hugging Face checkpoint";
    case ModelKind::Container:
        return "colibri container";
    }
    return "?";
}

size_t DoctorReport::count(Severity s) const {
    size_t n = 0;
    for (const Finding& f : findings)
        n += f.severity == s ? 1 : 0;
    return n;
}

namespace detail {

void Context::add(Severity s, const std::string& file, std::string problem, std::string action) {
    if (s == Severity::Error) broken.insert(file);
    report.findings.push_back({s, file, std::move(problem), std::move(action)});
}

void Context::step(const std::string& stage, const std::string& file) const {
    if (progress) progress(DoctorProgress{stage, file, 0, 0});
}

std::string Context::replaceAction(const std::string& file) const {
    bool listed = false;
    if (receipt)
        for (const auto& f : receipt->files)
            listed = listed || f.path == file;
    // A damaged copy is deleted first, so that the download cannot take it for a finished one.
    struct stat st {};
    const bool present = !file.empty() && ::lstat(path(file).c_str(), &st) == 0;
    const std::string again = present ? "delete it and download it again" : "download it again";
    if (listed) {
        const std::string& rev = receipt->commit.empty() ? receipt->revision : receipt->commit;
        return again + ": coli download " + receipt->repo + " --revision " + rev + " --include '" +
               file + "' --dir " + dir;
    }
    if (container) {
        return "convert the model again from its source checkpoint (" + container->modelId +
               "): coli convert SOURCE_DIR " + dir + " --force";
    }
    return again + " from where the model came from (coli download OWNER/NAME --dir " + dir + ")";
}

std::string Context::bare(const std::string& message, const std::string& file) const {
    for (const std::string& prefix : {path(file) + ": ", file + ": ", dir + ": "})
        if (message.rfind(prefix, 0) == 0) return message.substr(prefix.size());
    return message;
}

} // namespace detail

std::string detail::grouped(uint64_t v) {
    const std::string d = std::to_string(v);
    std::string out;
    for (size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
    }
    return out;
}

bool detail::engineReads(const std::string& file) {
    static const char* const kSideFiles[] = {"config.json",         "generation_config.json",
                                             "tokenizer.json",      "tokenizer_config.json",
                                             "chat_template.jinja", "model.safetensors.index.json",
                                             convert::kManifestName};
    for (const char* s : kSideFiles)
        if (file == s) return true;
    return file.find('/') == std::string::npos && fs::path(file).extension() == ".safetensors";
}

namespace {

// Which kind of model the folder holds; Unknown when it holds none.
ModelKind detectKind(const std::string& dir) {
    if (convert::isContainerDir(dir)) return ModelKind::Container;
    std::error_code ec;
    for (const char* name : {"config.json", "model.safetensors.index.json"}) {
        const fs::path p = fs::path(dir) / name;
        if (fs::exists(p, ec) || fs::is_symlink(p, ec)) return ModelKind::Checkpoint;
    }
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".safetensors") return ModelKind::Checkpoint;
    return ModelKind::Unknown;
}

Status checkOptions(const DoctorOptions& o) {
    const auto& b = o.bandwidth;
    if (o.measureBandwidth && (b.queueDepth < 1 || b.queueDepth > 64 || b.totalBytes == 0))
        return Status(ErrorCode::InvalidArgument,
                      "doctor: bandwidth queue depth " + std::to_string(b.queueDepth) +
                          " (1..64) and bytes " + std::to_string(b.totalBytes) + " (> 0)");
    return {};
}

void readReceipt(detail::Context& c) {
    const std::string name = hub::kDownloadReceiptName;
    struct stat st {};
    if (::lstat(c.path(name).c_str(), &st) != 0) return; // no receipt: not a download
    // readDownloadReceipt opens the file as it is: a named pipe in its place would block it.
    auto fd = openRegularFile(c.path(name));
    if (!fd) {
        c.add(Severity::Warning, name, c.bare(fd.status().message(), name),
              "remove it; the sizes and hashes the Hub gave cannot be checked without it");
        return;
    }
    ::close(fd.value());
    auto r = hub::readDownloadReceipt(c.dir);
    if (r) {
        c.receipt = std::move(r.value());
    } else if (r.status().code() != ErrorCode::NotFound) {
        c.add(Severity::Warning, hub::kDownloadReceiptName,
              c.bare(r.status().message(), hub::kDownloadReceiptName),
              "the sizes and hashes the Hub gave cannot be checked; download the model again "
              "to get a new receipt");
    }
}

} // namespace

Result<DoctorReport> diagnoseModel(const std::string& dir, const DoctorOptions& options,
                                   const DoctorProgressFn& progress,
                                   const std::atomic<bool>* cancel) {
    COLI_RETURN_IF_ERROR(checkOptions(options));
    DoctorReport report;
    report.dir = dir;
    detail::Context c(dir, options, progress, cancel, report);
    const auto cancelled = [&] { return Status(ErrorCode::Cancelled, dir + ": doctor cancelled"); };
    const auto finish = [&]() -> Result<DoctorReport> {
        report.ready = report.count(Severity::Error) == 0;
        return std::move(report);
    };

    std::error_code ec;
    if (Status link = symbolicLinkProblem(dir); !link.isOk()) {
        c.add(Severity::Error, "", c.bare(link.message(), ""),
              "point the command at the model folder itself");
        return finish();
    }
    if (!fs::exists(dir, ec) || !fs::is_directory(dir, ec)) {
        c.add(Severity::Error, "",
              fs::exists(dir, ec) ? "not a folder (a model is a folder of files)"
                                  : "no such folder",
              "give the model's folder: download one (coli download OWNER/NAME --dir DIR) or "
              "convert one (coli convert SRC_DIR DST_DIR)");
        return finish();
    }
    report.kind = detectKind(dir);
    if (report.kind != ModelKind::Container &&
        (fs::exists(fs::path(dir) / convert::kStateName, ec) ||
         fs::is_symlink(fs::path(dir) / convert::kStateName, ec))) {
        // The converter writes the manifest last: its state file without a manifest is a
        // conversion that stopped (Ctrl+C, a full disk, a crash), not a checkpoint.
        c.add(Severity::Error, convert::kStateName,
              "an unfinished conversion: the shards written so far are kept, the manifest "
              "(colibri.json) is not written yet",
              "run the same coli convert command again: it verifies the finished shards and "
              "writes the rest");
        report.kind = ModelKind::Unknown;
        return finish();
    }
    if (report.kind == ModelKind::Unknown) {
        c.add(Severity::Error, "",
              "no model here: no config.json, no *.safetensors and no colibri.json",
              "give the model's folder: download one (coli download OWNER/NAME --dir DIR) or "
              "convert one (coli convert SRC_DIR DST_DIR)");
        return finish();
    }

    c.step("checking", hub::kDownloadReceiptName);
    readReceipt(c);
    if (c.receipt) detail::checkReceiptSizes(c);
    if (c.cancelled()) return cancelled();
    c.step("checking", "config.json");
    detail::checkConfig(c);
    if (c.cancelled()) return cancelled();
    if (report.kind == ModelKind::Container)
        detail::checkContainer(c);
    else
        detail::checkCheckpoint(c);
    if (c.cancelled()) return cancelled();
    detail::checkSideFiles(c);
    if (c.cancelled()) return cancelled();
    if (options.deep) COLI_RETURN_IF_ERROR(detail::checkHashes(c));
    if (c.cancelled()) return cancelled();
    if (options.measureBandwidth) detail::measureBandwidth(c);
    if (c.cancelled()) return cancelled();
    return finish();
}

} // namespace coli::doctor
