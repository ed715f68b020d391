#pragma once
// `coli convert`: a Hugging Face checkpoint (F32/F16/BF16 safetensors) -> a colibri container
// (docs/container.md). Streaming (one piece of <= ~16 MiB f32 of one tensor in memory at a time),
// deterministic (same input and options, same bytes), resumable shard by shard (a state file in
// the destination records finished shards with their SHA-256; a rerun verifies and keeps them).
// Thread-safety: one conversion per destination at a time; otherwise no shared state.
#include "convert/file_layer.h"
#include "convert/manifest.h"
#include "convert/plan.h"
#include "core/status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace coli::convert {

constexpr const char* kStateName = "colibri-convert.state.json";

struct ConvertOptions {
    PlanOptions plan;
    bool force = false;                     // write into a non-empty destination
    std::string converter = "coli convert"; // recorded in the manifest (the CLI adds its version)
};

struct ConvertProgress {
    const char* phase = ""; // "hashing" (source files), "verifying" (resumed shards), "converting"
    size_t itemsDone = 0;   // tensors + expert blobs finished (converting/verifying)
    size_t itemsTotal = 0;
    uint64_t bytesDone = 0; // hashing: source bytes hashed; else container bytes done
    uint64_t bytesTotal = 0;
    double seconds = 0; // since the conversion started
};
using ConvertProgressFn = std::function<void(const ConvertProgress&)>;

// Which side a failure is about (the CLI's exit code depends on it).
enum class FailureSide {
    None,
    Source,      // the checkpoint cannot be read or converted, or changed meanwhile
    Destination, // refused destination (InvalidArgument) or a write failed (Io: disk full, ...)
};

struct ConvertReport {
    uint64_t sourceBytes = 0; // bytes of the source *.safetensors files
    uint64_t outputBytes = 0; // bytes of the container's shards
    size_t shardsWritten = 0;
    size_t shardsReused = 0; // finished by an earlier run, verified by SHA-256
    double seconds = 0;
    Container manifest;
};

// Converts `src` into `dst`. Refusals (before anything is written): dst is src or inside it,
// dst exists and is not a folder, dst is not empty (unless force, or it holds the state file of an
// interrupted conversion of the same source with the same options: then it resumes), not enough
// free space for the rest (fs.freeBytes vs. the planned size), a tensor of an unconvertible dtype.
// A source file whose size or mtime changes is reported after the shard being written (the shard
// is not kept). Errors: InvalidArgument (destination refusals), NotFound/Malformed/Unsupported/Io
// from reading the source, Io for failed writes,
// Cancelled when *cancel turns true (between tensors); NoSpace for "not enough free space" and a
// full disk. Finished shards stay on any failure.
// *side (optional) says which side failed.
Result<ConvertReport>
convertCheckpoint(const std::string& src, const std::string& dst, const ConvertOptions& opt,
                  FileSystem& fs = posixFileSystem(), const ConvertProgressFn& progress = {},
                  const std::atomic<bool>* cancel = nullptr, FailureSide* side = nullptr);

} // namespace coli::convert
