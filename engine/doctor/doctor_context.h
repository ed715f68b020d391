#pragma once
// Internal to coli_doctor: the state the checks share while one model folder is diagnosed, and
// the checks themselves (one file each: checks_*.cpp). Not part of the API (doctor.h is).
#include "convert/manifest.h"
#include "doctor/doctor.h"
#include "hub/download_receipt.h"
#include "model/config.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace coli {
class SafetensorsFile;
}

namespace coli::doctor::detail {

struct Context {
    Context(std::string d, const DoctorOptions& o, const DoctorProgressFn& p,
            const std::atomic<bool>* c, DoctorReport& r)
        : dir(std::move(d)), options(o), progress(p), cancel(c), report(r) {}

    std::string dir;
    const DoctorOptions& options;
    const DoctorProgressFn& progress;
    const std::atomic<bool>* cancel = nullptr;
    DoctorReport& report;

    std::optional<hub::DownloadReceipt> receipt; // colibri-download.json, when readable
    std::optional<ModelConfig> config;           // config.json, when it parses
    std::optional<convert::Container> container; // colibri.json, when it parses
    std::vector<std::string> weightFiles;        // the shards, relative to dir
    std::set<std::string> broken;                // files with an Error finding already

    std::string path(const std::string& rel) const { return dir + "/" + rel; }
    // Records a finding; an Error marks `file` broken, so later checks leave it alone.
    void add(Severity s, const std::string& file, std::string problem, std::string action);
    bool isBroken(const std::string& file) const { return broken.count(file) > 0; }
    bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
    void step(const std::string& stage, const std::string& file) const;

    // What to do about a missing, incomplete or damaged `file`: download it again (with the
    // receipt's repo and commit when there is one), or convert again for a container's shard.
    std::string replaceAction(const std::string& file) const;
    // An engine message without its leading "<path of file>: ", since a finding names the file.
    std::string bare(const std::string& message, const std::string& file) const;
};

// "1,048,576"
std::string grouped(uint64_t v);
// True for the files the engine reads (weights, index, manifest, config and tokenizer files): a
// problem with one of them is an Error; with another file (README.md) a Warning.
bool engineReads(const std::string& file);

// Each check adds its findings to the context; the order in diagnoseModel is the order of the
// report. Sizes of every file the download receipt lists (checks_receipt.cpp).
void checkReceiptSizes(Context& c);
// config.json (checks_config.cpp).
void checkConfig(Context& c);
// One safetensors shard: present, a regular file, `expectedSize` when given (by `expectedBy`,
// e.g. "the manifest"), the header's tensors ending at the file's size, the header valid. Returns
// the open file, or null when the shard is broken (an Error finding was added). `listedBy` says
// who lists the shard, for a missing one ("model.safetensors.index.json (e.g. for tensor x)").
std::unique_ptr<SafetensorsFile> checkShard(Context& c, const std::string& file,
                                            const std::string& listedBy,
                                            std::optional<uint64_t> expectedSize,
                                            const std::string& expectedBy);
// A Hugging Face checkpoint's index and shards, and the tensors the config needs
// (checks_checkpoint.cpp).
void checkCheckpoint(Context& c);
// A colibri container's manifest and shards (checks_container.cpp).
void checkContainer(Context& c);
// tokenizer.json, the chat template, generation_config.json (checks_side_files.cpp).
void checkSideFiles(Context& c);
// --deep: every file against the manifest's and the receipt's hashes (checks_hashes.cpp).
// Errors: Cancelled.
Status checkHashes(Context& c);
// The weights' disk read bandwidth (checks_bandwidth.cpp).
void measureBandwidth(Context& c);

} // namespace coli::doctor::detail
