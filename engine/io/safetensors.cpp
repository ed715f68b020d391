#include "io/safetensors.h"

#include "core/regular_file.h"
#include "io/file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

namespace coli {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping");

namespace {

using nlohmann::json;

// A header larger than this is refused before reading it: real checkpoints have headers of a few
// hundred KiB, and the JSON tree costs several times the text in memory.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

std::string shapeString(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

std::string rangeString(uint64_t b, uint64_t e) {
    // Appending (not "[" + ...) avoids a GCC 12 -Wrestrict false positive.
    std::string s = "[";
    s += std::to_string(b);
    s += ", ";
    s += std::to_string(e);
    s += ")";
    return s;
}

// dtypes of the safetensors format that this engine does not load (yet).
bool isKnownUnsupportedDtype(const std::string& s) {
    static const char* const kNames[] = {"BOOL", "F8_E5M2", "I16",     "U16",     "U32",     "U64",
                                         "F64",  "F4",      "F6_E2M3", "F6_E3M2", "F8_E8M0", "C64"};
    for (const char* n : kNames)
        if (s == n) return true;
    return false;
}

bool parseDtype(const std::string& s, DType& out) {
    static const DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::F8_E4M3,
                                 DType::I8,  DType::U8,  DType::I32,  DType::I64};
    for (DType t : kAll) {
        if (s == dtypeName(t)) {
            out = t;
            return true;
        }
    }
    return false;
}

// Reads a JSON integer that must be >= 0 and fit in uint64 / int64.
bool jsonToU64(const json& v, uint64_t& out) {
    if (v.is_number_unsigned()) {
        out = v.get<uint64_t>();
        return true;
    }
    if (v.is_number_integer()) {
        const int64_t x = v.get<int64_t>();
        if (x < 0) return false;
        out = uint64_t(x);
        return true;
    }
    return false;
}

} // namespace

const char* dtypeName(DType t) {
    switch (t) {
    case DType::F32:
        return "F32";
    case DType::F16:
        return "F16";
    case DType::BF16:
        return "BF16";
    case DType::F8_E4M3:
        return "F8_E4M3";
    case DType::I8:
        return "I8";
    case DType::U8:
        return "U8";
    case DType::I32:
        return "I32";
    case DType::I64:
        return "I64";
    }
    return "?";
}

size_t dtypeSize(DType t) {
    switch (t) {
    case DType::F32:
        return 4;
    case DType::F16:
        return 2;
    case DType::BF16:
        return 2;
    case DType::F8_E4M3:
        return 1;
    case DType::I8:
        return 1;
    case DType::U8:
        return 1;
    case DType::I32:
        return 4;
    case DType::I64:
        return 8;
    }
    return 0;
}

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d; // validated in open(): no overflow
    return n;
}

SafetensorsFile::~SafetensorsFile() {
    if (m_fd >= 0) ::close(m_fd);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_tensors[it->second];
}

Status SafetensorsFile::readRaw(const TensorInfo& t, uint64_t offset, uint64_t nbytes,
                                void* dst) const {
    const std::string what = m_path + ": tensor '" + t.name + "'";
    if (offset > t.nbytes || nbytes > t.nbytes - offset) {
        return {ErrorCode::InvalidArgument,
                what + ": byte range " + rangeString(offset, offset + nbytes) +
                    " outside the tensor's " + std::to_string(t.nbytes) + " bytes"};
    }
    // Guards against a TensorInfo that belongs to another file.
    if (t.fileOffset < m_dataOffset || t.fileOffset > m_fileSize ||
        t.nbytes > m_fileSize - t.fileOffset) {
        return {ErrorCode::InvalidArgument, what + ": tensor does not belong to this file"};
    }
    if (nbytes == 0) return Status::ok();
    return io_detail::preadAll(m_fd, t.fileOffset + offset, nbytes, dst, what);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->m_path = path;
    const std::string& P = path;

    // A named pipe in a shard's place would block open() itself: refused by name instead.
    Result<int> fd = openRegularFile(path, &f->m_fileSize);
    if (!fd) return fd.status();
    f->m_fd = fd.value();
    const uint64_t fileSize = f->m_fileSize;

    // --- header length ---
    if (fileSize < 8) {
        return {ErrorCode::Malformed, P + ": file is " + std::to_string(fileSize) +
                                          " bytes, shorter than the 8-byte header length"};
    }
    unsigned char lenBytes[8];
    COLI_RETURN_IF_ERROR(io_detail::preadAll(f->m_fd, 0, 8, lenBytes, P));
    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i)
        headerLen = headerLen << 8 | lenBytes[i];
    if (headerLen > kMaxHeaderBytes) {
        return {ErrorCode::Malformed, P + ": header length " + std::to_string(headerLen) +
                                          " bytes is absurdly large (limit " +
                                          std::to_string(kMaxHeaderBytes) + ")"};
    }
    if (headerLen > fileSize - 8) {
        return {ErrorCode::Malformed, P + ": header length " + std::to_string(headerLen) +
                                          " bytes is larger than the file (" +
                                          std::to_string(fileSize) + " bytes)"};
    }
    f->m_dataOffset = 8 + headerLen;
    const uint64_t dataSize = fileSize - f->m_dataOffset;

    std::string text(size_t(headerLen), '\0');
    COLI_RETURN_IF_ERROR(io_detail::preadAll(f->m_fd, 8, headerLen, text.data(), P));

    // --- JSON; nlohmann keeps the last of duplicate keys, so duplicates are caught while parsing.
    std::vector<std::unordered_set<std::string>> keyStack;
    std::string topKey, dupKey, dupOwner;
    bool dupTop = false;
    auto onEvent = [&](int, json::parse_event_t ev, json& parsed) -> bool {
        switch (ev) {
        case json::parse_event_t::object_start:
            keyStack.emplace_back();
            break;
        case json::parse_event_t::object_end:
            if (!keyStack.empty()) keyStack.pop_back();
            break;
        case json::parse_event_t::key: {
            if (keyStack.empty() || !parsed.is_string()) break;
            const std::string& k = parsed.get_ref<const std::string&>();
            if (!keyStack.back().insert(k).second && dupKey.empty()) {
                dupKey = k;
                dupTop = keyStack.size() == 1;
                dupOwner = topKey;
            }
            if (keyStack.size() == 1) topKey = k;
            break;
        }
        default:
            break;
        }
        return true;
    };
    json root;
    try {
        root = json::parse(text, onEvent, /*allow_exceptions=*/true);
    } catch (const json::exception& e) {
        return {ErrorCode::Malformed, P + ": header is not valid JSON: " + e.what()};
    }
    if (!dupKey.empty()) {
        if (dupTop) return {ErrorCode::Malformed, P + ": duplicate tensor name '" + dupKey + "'"};
        return {ErrorCode::Malformed,
                P + ": tensor '" + dupOwner + "': duplicate key '" + dupKey + "'"};
    }
    if (!root.is_object()) {
        return {ErrorCode::Malformed,
                P + ": header is not a JSON object (got " + root.type_name() + ")"};
    }

    // --- entries ---
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string& name = it.key();
        const json& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object())
                return {ErrorCode::Malformed, P + ": __metadata__ is not an object"};
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) {
                    return {ErrorCode::Malformed, P + ": __metadata__ key '" + m.key() +
                                                      "' is not a string (got " +
                                                      m.value().type_name() + ")"};
                }
                f->m_metadata.emplace(m.key(), m.value().get<std::string>());
            }
            continue;
        }
        const std::string T = P + ": tensor '" + name + "': ";
        if (!v.is_object()) return {ErrorCode::Malformed, T + "entry is not a JSON object"};
        for (const char* field : {"dtype", "shape", "data_offsets"}) {
            if (!v.contains(field)) return {ErrorCode::Malformed, T + "missing '" + field + "'"};
        }
        const json& jd = v["dtype"];
        const json& js = v["shape"];
        const json& jo = v["data_offsets"];
        if (!jd.is_string()) return {ErrorCode::Malformed, T + "'dtype' is not a string"};
        if (!js.is_array()) return {ErrorCode::Malformed, T + "'shape' is not an array"};
        if (!jo.is_array() || jo.size() != 2) {
            return {ErrorCode::Malformed, T + "'data_offsets' is not an array of two integers"};
        }

        TensorInfo info;
        info.name = name;
        const std::string dname = jd.get<std::string>();
        if (!parseDtype(dname, info.dtype)) {
            if (isKnownUnsupportedDtype(dname))
                return {ErrorCode::Unsupported, T + "dtype " + dname + " is not supported"};
            return {ErrorCode::Malformed, T + "unknown dtype '" + dname + "'"};
        }
        if (info.dtype == DType::F8_E4M3) {
            return {ErrorCode::Unsupported,
                    T + "dtype F8_E4M3 cannot be loaded directly: convert the checkpoint "
                        "first (coli convert reads F8_E4M3 with its block scales)"};
        }

        // Shape: non-negative dims whose product (and product x element size) fits in 63 bits.
        uint64_t numel = 1;
        bool overflow = false;
        for (const json& d : js) {
            if (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0) {
                return {ErrorCode::Malformed,
                        T + "negative dimension " + std::to_string(d.get<int64_t>()) + " in shape"};
            }
            uint64_t dim = 0;
            if (!jsonToU64(d, dim)) {
                return {ErrorCode::Malformed,
                        T + "shape holds a non-integer (" + std::string(d.type_name()) + ")"};
            }
            if (dim > uint64_t(INT64_MAX)) {
                overflow = true;
                break;
            }
            info.shape.push_back(int64_t(dim));
            if (dim != 0 && numel > uint64_t(INT64_MAX) / dim)
                overflow = true;
            else
                numel *= dim;
        }
        const uint64_t esize = dtypeSize(info.dtype);
        if (!overflow && numel > uint64_t(INT64_MAX) / esize) overflow = true;
        // A zero dimension makes the product 0 even when another factor is huge: still refuse.
        if (overflow) {
            return {ErrorCode::Malformed,
                    T + "shape " + js.dump() + " overflows (element count or byte size > 2^63)"};
        }
        if (std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end()) numel = 0;

        uint64_t begin = 0, end = 0;
        if (!jsonToU64(jo[0], begin) || !jsonToU64(jo[1], end)) {
            return {ErrorCode::Malformed,
                    T + "'data_offsets' " + jo.dump() + " are not non-negative integers"};
        }
        if (end < begin) {
            return {ErrorCode::Malformed, T + "data offsets " + jo.dump() + " are reversed"};
        }
        const uint64_t want = numel * esize;
        if (end - begin != want) {
            return {ErrorCode::Malformed, T + "data offsets " + rangeString(begin, end) + " hold " +
                                              std::to_string(end - begin) + " bytes but shape " +
                                              shapeString(info.shape) + " x " + dname + " (" +
                                              std::to_string(esize) + " bytes) needs " +
                                              std::to_string(want)};
        }
        info.fileOffset = begin; // relative until the bounds are checked below
        info.nbytes = want;
        f->m_tensors.push_back(std::move(info));
    }

    // --- overlap and bounds, in data order ---
    std::vector<size_t> order(f->m_tensors.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    auto& ts = f->m_tensors;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (ts[a].fileOffset != ts[b].fileOffset) return ts[a].fileOffset < ts[b].fileOffset;
        return ts[a].name < ts[b].name;
    });
    uint64_t maxEnd = 0;    // largest end offset so far (over all tensors)
    size_t maxEndIdx = 0;   // the tensor that has it
    bool contiguous = true; // each tensor starts where the previous ended (as writers lay them out)
    for (size_t k = 0; k < order.size(); ++k) {
        const TensorInfo& t = ts[order[k]];
        const uint64_t e = t.fileOffset + t.nbytes;
        // Sorted by begin, so any earlier tensor reaching past t's begin overlaps it; the one with
        // the largest end is a witness. Zero-byte tensors occupy nothing and overlap nothing.
        if (k > 0 && t.nbytes > 0 && t.fileOffset < maxEnd) {
            const TensorInfo& o = ts[maxEndIdx];
            return {ErrorCode::Malformed, P + ": tensor '" + t.name + "': data offsets " +
                                              rangeString(t.fileOffset, e) + " overlap tensor '" +
                                              o.name + "' at " +
                                              rangeString(o.fileOffset, o.fileOffset + o.nbytes)};
        }
        if (t.fileOffset != maxEnd) contiguous = false;
        if (k == 0 || e >= maxEnd) {
            maxEnd = e;
            maxEndIdx = order[k];
        }
    }
    if (maxEnd > dataSize) {
        const TensorInfo& t = ts[maxEndIdx];
        if (contiguous) {
            return {ErrorCode::Malformed, P + ": file truncated: data section is " +
                                              std::to_string(dataSize) + " bytes but tensor '" +
                                              t.name + "' ends at " + std::to_string(maxEnd)};
        }
        // Not laid out back to back: report the first tensor (in data order) that lies outside.
        for (size_t k : order) {
            const TensorInfo& u = ts[k];
            if (u.fileOffset + u.nbytes > dataSize) {
                return {ErrorCode::Malformed,
                        P + ": tensor '" + u.name + "': data offsets " +
                            rangeString(u.fileOffset, u.fileOffset + u.nbytes) +
                            " outside the data section (" + std::to_string(dataSize) + " bytes)"};
            }
        }
    }

    for (size_t i = 0; i < ts.size(); ++i) {
        ts[i].fileOffset += f->m_dataOffset;
        f->m_index.emplace(ts[i].name, i);
    }
    return f;
}

} // namespace coli
