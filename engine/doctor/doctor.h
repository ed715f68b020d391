#pragma once
// `coli doctor MODEL [--deep]` and the wizard's check step: is a model folder ready to run, and
// if not, which file is wrong and what to do about it. Qt-free; the app calls it on a worker
// thread. What is checked (docs/cli.md, "coli doctor"):
//   - a Hugging Face checkpoint (config.json + *.safetensors, + model.safetensors.index.json):
//     config.json parses and names a supported family; every shard the index lists (else every
//     *.safetensors) is present, its safetensors header valid and its data section ending at the
//     file's size; the tensors the config needs are there with their shapes;
//   - a colibri container (colibri.json, docs/container.md): the manifest parses and is
//     consistent (entries inside their shards, parts inside their blobs), every shard has the
//     manifest's size and a valid header that places each entry where the manifest says, the
//     manifest fits config.json;
//   - both: the sizes in the download receipt (colibri-download.json, hub/download_receipt.h)
//     when there is one; tokenizer.json loads; tokenizer_config.json holds a chat template that
//     loads (a missing one is reported, never replaced by another family's); generation_config.json
//     loads as the engine reads it;
//   - deep: every file hashed against the manifest's SHA-256 and the receipt's hashes (LFS files
//     by SHA-256, the others by git blob SHA-1);
//   - the read bandwidth of the disk that holds the weights (diskbench::measureReadBandwidth).
// One finding per broken file: a file found broken by one check is not reported again by the
// checks after it.
#include "core/status.h"
#include "diskbench/disk_bandwidth.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace coli::doctor {

enum class Severity {
    Error,   // the model cannot be loaded or would compute from damaged data: not ready
    Warning, // it loads, but something is missing or odd (e.g. no chat template)
    Info,    // worth knowing (e.g. the bandwidth is the page cache's, nothing to hash against)
};
const char* severityName(Severity s); // "error", "warning", "info"

struct Finding {
    Severity severity = Severity::Error;
    std::string file;    // relative to the model folder (e.g. "model-00002-of-00003.safetensors");
                         // "" for the folder itself
    std::string problem; // what is wrong, with the figures ("1,048,576 bytes, the manifest
                         // expects 2,097,152: the file is incomplete")
    std::string action;  // what to do ("delete it and download it again (coli download ...)")
};

enum class ModelKind {
    Unknown,    // no model found in the folder
    Checkpoint, // a Hugging Face checkpoint
    Container,  // a colibri container
};
const char*
modelKindName(ModelKind k); // "no model", "Hugging Face checkpoint", "colibri container"

struct DoctorOptions {
    bool deep = false;                // hash every file against the manifest / download receipt
    bool measureBandwidth = true;     // measure the weights' disk read bandwidth
    bool requireChatTemplate = false; // a missing or unloadable chat template is an error (the
                                      // wizard, which opens the model for chat); else a warning
    diskbench::BandwidthOptions bandwidth = defaultBandwidth();

    // 64 MiB in 4 MiB reads: a second or less on an SSD, enough to see the disk's rate.
    static diskbench::BandwidthOptions defaultBandwidth() {
        diskbench::BandwidthOptions b;
        b.totalBytes = 64ull << 20;
        return b;
    }
};

struct DoctorProgress {
    std::string stage;       // "checking", "hashing", "measuring"
    std::string file;        // the file at hand, relative to the model folder ("" when none)
    uint64_t bytesDone = 0;  // hashing: bytes hashed so far, over all files to hash
    uint64_t bytesTotal = 0; // hashing: bytes of all the files to hash; 0 in the other stages
};
// Called on the calling thread, between files and every 4 MiB while hashing.
using DoctorProgressFn = std::function<void(const DoctorProgress&)>;

struct DoctorReport {
    std::string dir;
    ModelKind kind = ModelKind::Unknown;
    std::string architecture;      // config.json's architectures[0]; "" when it cannot be read
    std::vector<Finding> findings; // in the order of the checks
    bool ready = false;            // no finding of severity Error
    bool chatTemplate = false;     // a chat template loads (tokenizer_config.json)
    int weightFiles = 0;           // weight files (shards) the index, folder or manifest lists
    int filesChecked = 0;          // of those, the ones found whole with a valid header
    int filesHashed = 0;           // deep: files hashed
    uint64_t bytesHashed = 0;      // deep: their bytes
    std::optional<diskbench::DiskBandwidth> bandwidth; // unset when skipped or not measurable
    size_t count(Severity s) const;
};

// Checks the model folder `dir` (see above). Every problem with the model, including a missing
// folder, is a Finding, not an error. Runs on the calling thread; reads files only (never writes
// or changes the folder); memory: one 4 MiB buffer while hashing, the side files (<= 256 MiB
// each) and the safetensors headers. Errors: InvalidArgument (bad bandwidth options),
// Cancelled once *cancel (may be null; may be set from any thread) turns true: checked between
// files and every 4 MiB while hashing. Thread-safety: a plain function; calls on different
// folders may overlap (their bandwidth figures then share the disk).
Result<DoctorReport> diagnoseModel(const std::string& dir, const DoctorOptions& options = {},
                                   const DoctorProgressFn& progress = {},
                                   const std::atomic<bool>* cancel = nullptr);

} // namespace coli::doctor
