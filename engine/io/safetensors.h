#pragma once
// Safetensors reader over pread (no mmap of weights).
// Format: https://github.com/huggingface/safetensors ("Format" section): 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end)}, optional
// "__metadata__"}, then the data section; offsets are relative to the start of the data section.
//
// Validation happens in open(), before any tensor is used. Refusals (each message names the file
// and, where one is involved, the tensor):
//   file shorter than 8 bytes; header length larger than the file or absurdly large (> 100 MiB);
//   header not valid JSON / not an object; a tensor entry missing dtype/shape/data_offsets;
//   duplicate tensor names; unknown dtype; F8_E4M3 (refused for now: "not supported yet");
//   negative or overflowing shape; data offsets reversed, outside the data section, or overlapping
//   another tensor; byte size that disagrees with shape x dtype size; file truncated (data section
//   shorter than the largest end offset).
// Codes: Malformed for all of the above except F8_E4M3 and the known-but-unloaded safetensors
// dtypes (F64, BOOL, I16, U16, U32, U64, F8_E5M2, ...), which are Unsupported; NotFound when the
// file does not exist; Io when a read fails. Gaps between tensors and bytes after the last one are
// allowed (some writers align). When data offsets run past the end of the file, the message says
// "file truncated" if the tensors are laid out back to back from offset 0 (a cut-off download),
// and "outside the data section" otherwise.
// Memory: open() reads only the 8-byte length and the header (<= 100 MiB), never tensor data.
// Thread-safety: after open(), all const methods are safe to call from several threads at once
// (pread has no shared file position).
#include "core/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace coli {

enum class DType { F32, F16, BF16, F8_E4M3, I8, U8, I32, I64 };

const char* dtypeName(DType t); // the safetensors spelling, e.g. "BF16"
size_t dtypeSize(DType t);      // bytes per element

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape; // row-major, outermost first, e.g. [out_features, in_features]
    uint64_t fileOffset = 0;    // absolute byte offset of the first element in the shard file
    uint64_t nbytes = 0;        // bytes of data
    int shard = 0;              // index into Checkpoint::shardPaths()
    int64_t numel() const;
};

// One .safetensors file. Holds an open file descriptor (closed on destruction).
class SafetensorsFile {
public:
    // Opens and validates `path`. Errors: NotFound, Io, Malformed, Unsupported.
    static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return m_path; }
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const TensorInfo* find(const std::string& name) const; // nullptr when absent
    const std::unordered_map<std::string, std::string>& metadata() const { return m_metadata; }
    uint64_t dataOffset() const { return m_dataOffset; } // absolute offset of the data section

    // Reads `nbytes` bytes starting `offset` bytes into the tensor's data into dst.
    // Errors: InvalidArgument (range outside the tensor), Io (short read, with file + tensor).
    Status readRaw(const TensorInfo& t, uint64_t offset, uint64_t nbytes, void* dst) const;

private:
    friend class Checkpoint; // sets TensorInfo::shard on the tensors it collects
    SafetensorsFile() = default;
    std::string m_path;
    int m_fd = -1;
    uint64_t m_fileSize = 0;
    uint64_t m_dataOffset = 0;
    std::vector<TensorInfo> m_tensors;
    std::unordered_map<std::string, size_t> m_index;
    std::unordered_map<std::string, std::string> m_metadata;
};

// A checkpoint directory: either `model.safetensors.index.json` (weight_map: name -> shard file;
// every listed shard must exist and open cleanly before loading starts) or, without an index,
// every `*.safetensors` file in the directory (usually one `model.safetensors`).
// A tensor name present in two shards, or mapped by the index to a shard that lacks it, is
// Malformed. Thread-safety: const methods safe from several threads after open().
class Checkpoint {
public:
    // Errors: NotFound (dir missing, no safetensors, or a shard listed in the index missing: the
    // message names the shard and the index), Malformed (invalid index JSON, no weight_map, a
    // shard path leaving the folder, a tensor in two shards, a tensor the index maps to a shard
    // that lacks it, or any refusal of SafetensorsFile::open naming the shard), Io, Unsupported.
    // Tensors present in a shard but absent from the index are still loaded.
    static Result<std::unique_ptr<Checkpoint>> open(const std::string& dir);

    const std::string& dir() const { return m_dir; }
    const std::vector<std::string>& shardPaths() const { return m_shardPaths; }
    const TensorInfo* find(const std::string& name) const; // nullptr when absent
    std::vector<const TensorInfo*> tensors() const;        // all tensors, sorted by name
    uint64_t totalBytes() const;                           // sum of tensor data bytes

    // Reads a whole tensor converted to f32 (F32/F16/BF16 sources; exact) into out (resized to
    // numel). Errors: NotFound (no such tensor), Unsupported (other dtypes), Io.
    Status readF32(const std::string& name, std::vector<float>& out) const;
    // Reads `count` elements starting at element `first` (row-major), converted to f32, into dst.
    // Used to read one expert out of a stacked [n_experts, ...] tensor. Errors: as readF32, plus
    // InvalidArgument when [first, first + count) is not inside the tensor. F16/BF16 go through a
    // 128 KiB staging buffer.
    Status readF32Range(const std::string& name, int64_t first, int64_t count, float* dst) const;
    // Raw bytes of a tensor range (offset/nbytes relative to the tensor's first byte), in the
    // file's (little-endian) layout. Errors: InvalidArgument (range outside the tensor, or a
    // TensorInfo not from this checkpoint), Io.
    Status readRaw(const TensorInfo& t, uint64_t offset, uint64_t nbytes, void* dst) const;

private:
    std::string m_dir;
    std::vector<std::string> m_shardPaths;
    std::vector<std::unique_ptr<SafetensorsFile>> m_files;
    std::unordered_map<std::string, const TensorInfo*> m_byName;
};

} // namespace coli
