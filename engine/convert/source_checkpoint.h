#pragma once
// The converter's view of a source checkpoint: io's Checkpoint, plus F8_E4M3 weights with
// DeepSeek-V3-style block scales, which io refuses (the engine itself never runs them; they are
// only converted). Layout of such checkpoints (DeepSeek-V3 `inference/fp8_cast_bf16.py` and
// `kernel.py` weight_dequant): a weight W [rows, cols] stored as F8_E4M3 comes with
// `<name>_scale_inv` [ceil(rows/128), ceil(cols/128)] (F32 or BF16); the real weight is
// W[r, c] = f8(W[r, c]) * scale_inv[r / 128, c / 128].
// F8_E4M3 here is the "FN" variant of the OCP FP8 spec (torch.float8_e4m3fn): 1 sign, 4 exponent
// bits (bias 7), 3 mantissa bits, no infinities, S.1111.111 is NaN, largest finite 448.
// Thread-safety: const methods are safe from several threads after open().
#include "core/status.h"
#include "io/safetensors.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace coli::convert {

// One F8_E4M3 (FN) byte as f32 (exact). NaN for 0x7F / 0xFF.
float f8e4m3ToF32(uint8_t v);

class SourceCheckpoint {
public:
    // io's Checkpoint::open; only when it refuses an F8_E4M3 tensor, the converter's own header
    // parser (same shard discovery: the index's weight_map, else every *.safetensors; the same
    // checks of dtype, shape, sizes, bounds and duplicate names). Errors: those of
    // Checkpoint::open.
    static Result<std::unique_ptr<SourceCheckpoint>> open(const std::string& dir);
    ~SourceCheckpoint();

    const std::string& dir() const { return m_dir; }
    const std::vector<std::string>& shardPaths() const;
    std::vector<const TensorInfo*> tensors() const; // sorted by name
    const TensorInfo* find(const std::string& name) const;

    // The block-scale tensor of an F8_E4M3 weight ("<name>_scale_inv"), nullptr when absent.
    const TensorInfo* scaleOf(const TensorInfo& weight) const;
    // Checks that an F8_E4M3 tensor is 2-D and has a scale tensor of shape
    // [ceil(rows/128), ceil(cols/128)] and dtype F32 or BF16. Errors: Unsupported, Malformed.
    Status checkF8(const TensorInfo& weight) const;

    // `count` elements from element `first` (row-major) as f32: F32/F16/BF16 exactly as
    // Checkpoint::readF32Range; F8_E4M3 times its block scale (checkF8 first). Errors:
    // NotFound, InvalidArgument (range), Unsupported (other dtypes), Malformed (checkF8), Io.
    Status readF32Range(const std::string& name, int64_t first, int64_t count, float* dst) const;

private:
    SourceCheckpoint() = default;
    Status parseShard(const std::string& path, int shard);
    Status readRaw(const TensorInfo& t, uint64_t offset, uint64_t nbytes, void* dst) const;

    std::string m_dir;
    std::unique_ptr<Checkpoint> m_ck; // the normal case
    // Own parse (F8 checkpoints only):
    std::vector<std::string> m_paths;
    std::vector<int> m_fds;
    std::vector<std::unique_ptr<TensorInfo>> m_own;
    std::unordered_map<std::string, const TensorInfo*> m_byName;
};

} // namespace coli::convert
