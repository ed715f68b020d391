#pragma once
// The container's layout, decided before a byte is written: which source tensor (or slice of a
// stacked tensor) goes where, in which format, in which shard, at which offset. Pure function of
// the checkpoint's tensor table, config.json and the options, so a rerun (resume) finds the same
// shards and a second conversion the same bytes. Layout rules: docs/container.md.
// Thread-safety: plain data; makePlan is pure.
#include "convert/source_checkpoint.h"
#include "convert/stored_format.h"
#include "core/status.h"
#include "io/safetensors.h"
#include "model/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::convert {

constexpr uint64_t kAlign = 4096;   // expert blobs and the data section start at multiples
constexpr uint64_t kPartAlign = 64; // gate/up/down inside an expert blob start at multiples
// 2: quantised matrices whose rows divide by 8 are stored in the -r8 layouts (quant/formats.h).
constexpr int kContainerFormatVersion = 2;
constexpr int kConverterVersion = 2; // bump when the bytes written for the same input change

struct PlanOptions {
    StoredFormat experts = StoredFormat::Q4_G64; // Q4_G64, Q4_G32, Q8_G64 or Q8_G32
    StoredFormat dense = StoredFormat::Q8_G64;   // Q8_G64 or BF16
    StoredFormat embed = StoredFormat::Q8_G64;   // embeddings and lm_head: Q8_G64 or BF16
    uint64_t maxShardBytes = uint64_t(4) << 30;  // a shard closes before it would exceed this
                                                 // (a single larger tensor gets its own shard)
};

// `rows` x `cols` consecutive elements of a source tensor starting at element `first`.
struct SourceSlice {
    std::string tensor;
    int64_t first = 0;
    int64_t rows = 0;
    int64_t cols = 0;
};

// One matrix (or vector) written at `offset` bytes into its item.
struct PlannedPart {
    SourceSlice src;
    StoredFormat format = StoredFormat::F32;
    std::vector<int64_t> shape; // logical shape ([rows, cols] for matrices; the source's otherwise)
    uint64_t offset = 0;        // bytes from the item's first byte
    uint64_t length = 0;        // storedBytes(format, rows, cols)
};

// One tensor of the container: a dense tensor (one part) or an expert blob (gate, up, down).
struct PlannedItem {
    std::string name; // tensor name in the container
    TensorClass cls = TensorClass::Dense;
    int layer = -1; // experts: layer and expert index; dense: the layer (-1: none)
    int expert = -1;
    std::vector<PlannedPart> parts;
    DType dtype = DType::U8;          // safetensors dtype (U8 for quantised data and blobs)
    std::vector<int64_t> storedShape; // safetensors shape
    uint64_t length = 0;              // bytes in the file (blobs: padded to kAlign)
    int shard = -1;
    uint64_t dataOffset = 0; // from the start of the shard's data section
    uint64_t fileOffset = 0; // absolute in the shard file
};

struct PlannedShard {
    std::string file;          // "model-00001-of-00003.safetensors"
    std::string header;        // the JSON header, space-padded (8 + size is a multiple of kAlign)
    uint64_t bytes = 0;        // whole file
    std::vector<size_t> items; // indices into Plan::items, in file order (blobs first)
};

struct Plan {
    std::vector<PlannedItem> items; // conversion order
    std::vector<PlannedShard> shards;
    uint64_t totalBytes = 0;  // sum of shard sizes
    uint64_t sourceBytes = 0; // tensor bytes read from the source
};

// Source dtypes the converter reads: F32, F16, BF16, and F8_E4M3 with block scales
// (source_checkpoint.h; the scale tensors are consumed, not copied).
bool convertibleDtype(DType t);

// Classifies every tensor of `ck` with the names of model/tensor_names.h and lays out the
// container. Routed experts (per-expert or stacked source layout) become one blob per (layer,
// expert); other tensors keep their names. Errors: Unsupported (a tensor whose dtype is not
// convertible, naming it, or F8_E4M3 without its scales; an expert matrix whose columns are not a
// multiple of 32), NotFound (an expert tensor the config needs is missing), Malformed (an expert
// tensor with the wrong shape).
Result<Plan> makePlan(const SourceCheckpoint& ck, const ModelConfig& cfg, const PlanOptions& opt);

} // namespace coli::convert
