#pragma once
// What the wizard needs to know about a model folder already on this computer (Qt-free): a
// Hugging Face checkpoint to convert or run as published, or a colibri container to run as it is.
// Read from config.json, the safetensors headers (no weights are read) and, for a checkpoint, the
// converter's own plan, so the container's size is the size `coli convert` will write.
// Thread-safety: plain functions that read files: call them on a worker thread.
#include "convert/plan.h"
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli::app::wizard {

struct LocalModel {
    std::string dir;
    bool isContainer = false;
    bool supported = false;   // config.json names a family this app runs
    std::string note;         // why not, in words (unsupported: the architecture and reason)
    std::string architecture; // config.json "architectures"[0]
    int64_t parameters = 0;   // elements of every tensor (a checkpoint), 0 when unknown
    int layers = 0, experts = 0, expertsPerToken = 0;
    uint64_t folderBytes = 0;    // every regular file in the folder, recursively
    uint64_t containerBytes = 0; // checkpoint: the container's planned size for the options
    std::string formats;         // container: its formats ("int4-g64 experts, ...")
};

// Errors: NotFound (no folder, no config.json), Malformed/Unsupported/Io from the headers or the
// manifest, naming the file. An architecture this app cannot run is not an error: supported is
// false and note says why.
Result<LocalModel> inspectLocalModel(const std::string& dir, const convert::PlanOptions& plan);

// The container's size `coli convert` would write for `dir` with `plan` (the converter's plan).
// Errors: those of opening the checkpoint and planning.
Result<uint64_t> plannedContainerBytes(const std::string& dir, const convert::PlanOptions& plan);

} // namespace coli::app::wizard
