#pragma once
// Test helper: writes small safetensors files (and deliberately broken ones) byte by byte, so the
// reader's tests do not depend on the reader or on any other writer.
// Format: 8-byte little-endian header length, JSON header, data section.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace st_test {

using Bytes = std::vector<uint8_t>;

struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    Bytes data;
};

inline Bytes f32Bytes(const std::vector<float>& v) {
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

inline Bytes u16Bytes(const std::vector<uint16_t>& v) {
    Bytes b(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
        b[2 * i] = uint8_t(v[i] & 0xFF);
        b[2 * i + 1] = uint8_t(v[i] >> 8);
    }
    return b;
}

inline std::string shapeJson(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i) out += ",";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

// One header entry with explicit offsets (may be made inconsistent on purpose).
inline std::string entryJson(const std::string& name, const std::string& dtype,
                             const std::vector<int64_t>& shape, uint64_t begin, uint64_t end) {
    // Built by appending: "lit" + string chains trip GCC 12's -Wrestrict false positive.
    std::string e = "\"";
    e += name;
    e += "\":{\"dtype\":\"";
    e += dtype;
    e += "\",\"shape\":";
    e += shapeJson(shape);
    e += ",\"data_offsets\":[";
    e += std::to_string(begin);
    e += ",";
    e += std::to_string(end);
    e += "]}";
    return e;
}

// {e1,e2,...} from entries made by entryJson.
inline std::string objectJson(std::initializer_list<std::string> entries) {
    std::string h = "{";
    for (const std::string& e : entries) {
        if (h.size() > 1) h += ",";
        h += e;
    }
    h += "}";
    return h;
}

// Header for tensors laid out back to back, in the given order.
inline std::string headerFor(const std::vector<Tensor>& ts, const std::string& metadata = "") {
    std::string h = "{";
    if (!metadata.empty()) h += "\"__metadata__\":" + metadata;
    uint64_t off = 0;
    for (const Tensor& t : ts) {
        if (h.size() > 1) h += ",";
        h += entryJson(t.name, t.dtype, t.shape, off, off + t.data.size());
        off += t.data.size();
    }
    return h + "}";
}

inline Bytes concatData(const std::vector<Tensor>& ts) {
    Bytes d;
    for (const Tensor& t : ts)
        d.insert(d.end(), t.data.begin(), t.data.end());
    return d;
}

// The file image: length prefix (headerLen, normally header.size()) + header + data.
inline Bytes fileImage(const std::string& header, const Bytes& data, int64_t headerLen = -1) {
    const uint64_t n = headerLen < 0 ? header.size() : uint64_t(headerLen);
    Bytes b(8 + header.size() + data.size());
    for (int i = 0; i < 8; ++i)
        b[size_t(i)] = uint8_t(n >> (8 * i));
    std::copy(header.begin(), header.end(), b.begin() + 8);
    std::copy(data.begin(), data.end(), b.begin() + 8 + ptrdiff_t(header.size()));
    return b;
}

inline void writeBytes(const std::filesystem::path& p, const Bytes& b) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

inline void writeText(const std::filesystem::path& p, const std::string& s) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << s;
}

inline void writeSafetensors(const std::filesystem::path& p, const std::vector<Tensor>& ts,
                             const std::string& metadata = "") {
    writeBytes(p, fileImage(headerFor(ts, metadata), concatData(ts)));
}

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
public:
    TempDir() {
        std::random_device rd;
        const auto base = std::filesystem::temp_directory_path();
        for (;;) {
            m_path = base / ("coli-io-test-" + std::to_string(rd()) + std::to_string(rd()));
            if (std::filesystem::create_directory(m_path)) break;
        }
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }
    std::string file(const std::string& name) const { return (m_path / name).string(); }

private:
    std::filesystem::path m_path;
};

} // namespace st_test
