#pragma once
// colibri.json, the container's manifest (schema and example: docs/container.md), and
// openContainer(), which the engine's loader and the expert cache use to find every tensor and
// expert without parsing the safetensors headers.
// Thread-safety: plain data; functions are pure apart from reading files.
#include "convert/stored_format.h"
#include "core/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coli::convert {

constexpr const char* kManifestName = "colibri.json";

// One matrix inside an expert blob.
struct ExpertPart {
    StoredFormat format = StoredFormat::Q4_G64;
    std::vector<int64_t> shape; // [rows, cols]: gate/up [ffn, d_model], down [d_model, ffn]
    uint64_t offset = 0;        // bytes from the blob's first byte
    uint64_t length = 0;        // storedBytes(format, rows, cols)
};

struct ExpertEntry {
    int layer = 0;
    int expert = 0;
    std::string tensor;  // the blob's safetensors name
    std::string file;    // shard file name, relative to the container folder
    uint64_t offset = 0; // absolute byte offset in the file (multiple of 4096)
    uint64_t length = 0; // blob bytes (multiple of 4096); one read of [offset, offset+length)
    ExpertPart gate, up, down;
};

struct TensorEntry {
    std::string name; // the source's tensor name
    TensorClass cls = TensorClass::Dense;
    std::string file;
    uint64_t offset = 0; // absolute byte offset in the file
    uint64_t length = 0;
    StoredFormat format = StoredFormat::F32;
    std::vector<int64_t> shape; // logical shape (quantised data is stored as U8 [rows, rowBytes])
    std::string sourceDtype;    // "BF16", "F16", "F32"
};

struct FileEntry {
    std::string file;
    uint64_t bytes = 0;
    std::string sha256; // lowercase hex
};

struct Container {
    std::string dir; // set by openContainer
    int formatVersion = 0;
    int converterVersion = 0;
    std::string converter; // e.g. "coli convert 0.1.0"
    std::string modelId;   // config.json _name_or_path, else the source folder's name
    std::string architecture;
    std::vector<FileEntry> sourceFiles; // every source file read or copied, with its SHA-256
    std::map<std::string, std::string> quantisation; // class name -> requested format name
    std::vector<FileEntry> shards;
    std::vector<TensorEntry> tensors;
    std::vector<ExpertEntry> experts; // sorted by (layer, expert)

    // nullptr when absent. Linear / binary search; callers cache what they need.
    const ExpertEntry* expert(int layer, int expert) const;
    const TensorEntry* tensor(const std::string& name) const;
    // "int4-g64 experts, int8-g64 dense, int8-g64 embeddings, ..." (for `coli info`), plus a
    // note to convert again when the container is format version 1 (untiled rows).
    std::string describe() const;
};

// The manifest as JSON text (deterministic: same Container, same bytes; ends with a newline).
std::string manifestToJson(const Container& c);
// Parses and validates manifest text: required keys and types, known formats and classes,
// format_version <= kContainerFormatVersion, every entry's file among `shards`, every range inside
// its shard's bytes, expert offsets and lengths multiples of 4096, parts inside their blob with
// the length their format and shape need. Errors: Malformed (naming `sourceName` and the entry),
// Unsupported (a newer format_version).
Result<Container> parseManifest(const std::string& text, const std::string& sourceName);

// True when `dir` holds an entry named colibri.json (a container, not a Hugging Face checkpoint),
// of any type: openContainer refuses one that is not a regular file, naming it.
bool isContainerDir(const std::string& dir);
// Reads <dir>/colibri.json (parseManifest), then checks that every shard exists with the size the
// manifest gives (no hashing: cheap enough for every start). Errors: NotFound (no manifest, a
// missing shard), Malformed (parseManifest, a shard of the wrong size), Io, Unsupported.
Result<Container> openContainer(const std::string& dir);

} // namespace coli::convert
