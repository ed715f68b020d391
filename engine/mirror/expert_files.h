#pragma once
// Which of a model's files hold which routed experts, and how many bytes of each: the input of the
// mirror plan (docs/mirror.md "The plan"). Whole files are the unit of a mirror, so the plan needs,
// per file, its size and the experts stored in it.
//   colibri container: the manifest's expert entries (convert/manifest.h): each expert is one
//                      blob in one shard.
//   Hugging Face checkpoint: the safetensors index and headers, through locateExpert
//                      (model/weights.h, tensor names of model/tensor_names.h): an expert's gate,
//                      up and down may lie in different shards (per-expert tensors) or be ranges
//                      of a layer's stacked tensors; each part counts in the shard holding it.
// Files that hold no routed expert (dense-only shards, config, tokenizer) are not listed.
// Thread-safety: pure apart from reading the model's headers; no shared state.
#include "core/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace coli::mirror {

// The bytes of one routed expert stored in one file.
struct ExpertPiece {
    int layer = 0;
    int expert = 0;
    uint64_t bytes = 0; // > 0
};

struct ExpertFile {
    std::string path;                // relative to the model folder, '/'-separated
    uint64_t size = 0;               // the file's size in bytes
    uint64_t expertBytes = 0;        // sum of pieces' bytes (<= size)
    std::vector<ExpertPiece> pieces; // sorted by (layer, expert)
};

struct ModelExpertFiles {
    std::string dir;               // the model folder as given
    bool container = false;        // a colibri container (else a Hugging Face checkpoint)
    std::vector<ExpertFile> files; // only files holding routed experts, sorted by path
    // Every routed expert's bytes over all files: (layer, expert) -> bytes. A piece's share of its
    // expert's heat is piece.bytes / expertBytes[(layer, expert)].
    std::map<std::pair<int, int>, uint64_t> expertBytes;
};

// Reads the manifest (container) or the config, index and headers (checkpoint) of `modelDir`;
// no tensor data is read. Errors: those of openContainer / loadConfig / Checkpoint::open /
// locateExpert (NotFound, Malformed, Unsupported, Io), each naming the file; Io when a file's
// size cannot be read; Malformed when the model has no routed expert at all (nothing to mirror).
Result<ModelExpertFiles> findExpertFiles(const std::string& modelDir);

} // namespace coli::mirror
