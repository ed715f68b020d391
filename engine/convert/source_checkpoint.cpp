#include "convert/source_checkpoint.h"

#include "core/file_text.h"
#include "core/regular_file.h"
#include "io/dtype.h"
#include "io/file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace coli::convert {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kF8Block = 128;
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

std::array<float, 256> makeF8Table() {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) {
        const int sign = v >> 7, exp = (v >> 3) & 15, mant = v & 7;
        float x;
        if (exp == 15 && mant == 7)
            x = std::numeric_limits<float>::quiet_NaN();
        else if (exp == 0)
            x = std::ldexp(float(mant) / 8.0f, -6); // subnormal: 0.mmm x 2^(1-7)
        else
            x = std::ldexp(1.0f + float(mant) / 8.0f, exp - 7);
        t[size_t(v)] = sign ? -x : x;
    }
    return t;
}

const std::array<float, 256>& f8Table() {
    static const std::array<float, 256> t = makeF8Table();
    return t;
}

bool parseDtypeName(const std::string& s, DType* out) {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::I8, DType::U8,
                    DType::I32, DType::I64}) {
        if (s == dtypeName(t)) {
            *out = t;
            return true;
        }
    }
    return false;
}

int64_t ceilDiv(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

} // namespace

float f8e4m3ToF32(uint8_t v) {
    return f8Table()[v];
}

SourceCheckpoint::~SourceCheckpoint() {
    for (int fd : m_fds)
        if (fd >= 0) ::close(fd);
}

Result<std::unique_ptr<SourceCheckpoint>> SourceCheckpoint::open(const std::string& dir) {
    std::unique_ptr<SourceCheckpoint> s(new SourceCheckpoint());
    s->m_dir = dir;
    auto ck = Checkpoint::open(dir);
    if (ck) {
        s->m_ck = std::move(ck.value());
        for (const TensorInfo* t : s->m_ck->tensors())
            s->m_byName.emplace(t->name, t);
        return s;
    }
    if (ck.status().code() != ErrorCode::Unsupported ||
        ck.status().message().find("F8_E4M3") == std::string::npos)
        return ck.status();

    // Shards as Checkpoint::open finds them.
    const fs::path index = fs::path(dir) / "model.safetensors.index.json";
    std::vector<std::string> names;
    std::error_code ec;
    if (fs::exists(index, ec)) {
        auto text = readTextFile(index.string());
        if (!text) return text.status();
        std::set<std::string> set;
        try {
            const json j = json::parse(text.value());
            for (auto& [tensor, file] : j.at("weight_map").items()) {
                const std::string f = file.get<std::string>();
                if (f.empty() || f.front() == '/' || f.find("..") != std::string::npos)
                    return {ErrorCode::Malformed,
                            index.string() + ": shard '" + f + "' is a path outside the folder"};
                set.insert(f);
            }
        } catch (const json::exception& e) {
            return {ErrorCode::Malformed, index.string() + ": " + e.what()};
        }
        names.assign(set.begin(), set.end());
    } else {
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".safetensors") names.push_back(e.path().filename());
        std::sort(names.begin(), names.end());
    }
    for (size_t i = 0; i < names.size(); ++i)
        COLI_RETURN_IF_ERROR(s->parseShard((fs::path(dir) / names[i]).string(), int(i)));
    return s;
}

Status SourceCheckpoint::parseShard(const std::string& path, int shard) {
    uint64_t size = 0;
    Result<int> opened = openRegularFile(path, &size);
    if (!opened) return opened.status();
    const int fd = opened.value();
    m_fds.push_back(fd);
    m_paths.push_back(path);
    unsigned char len[8];
    if (size < 8) return {ErrorCode::Malformed, path + ": shorter than 8 bytes"};
    COLI_RETURN_IF_ERROR(io_detail::preadAll(fd, 0, 8, len, path));
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = n << 8 | len[i];
    if (n > kMaxHeaderBytes || n > size - 8)
        return {ErrorCode::Malformed, path + ": header length " + std::to_string(n) + " invalid"};
    std::string text(size_t(n), '\0');
    COLI_RETURN_IF_ERROR(io_detail::preadAll(fd, 8, n, text.data(), path));
    const uint64_t dataStart = 8 + n, dataSize = size - dataStart;
    json h;
    try {
        h = json::parse(text);
    } catch (const json::exception& e) {
        return {ErrorCode::Malformed, path + ": header is not valid JSON: " + e.what()};
    }
    if (!h.is_object()) return {ErrorCode::Malformed, path + ": header is not a JSON object"};
    for (auto& [name, v] : h.items()) {
        if (name == "__metadata__") continue;
        const std::string T = path + ": tensor '" + name + "': ";
        auto t = std::make_unique<TensorInfo>();
        t->name = name;
        t->shard = shard;
        try {
            const std::string d = v.at("dtype").get<std::string>();
            if (!parseDtypeName(d, &t->dtype))
                return {ErrorCode::Unsupported, T + "dtype " + d + " is not supported"};
            uint64_t numel = 1;
            for (const json& x : v.at("shape")) {
                const int64_t dim = x.get<int64_t>();
                if (dim < 0 || (dim > 0 && numel > (uint64_t(1) << 50) / uint64_t(dim)))
                    return {ErrorCode::Malformed, T + "shape out of range"};
                numel *= uint64_t(dim);
                t->shape.push_back(dim);
            }
            const uint64_t b = v.at("data_offsets").at(0).get<uint64_t>();
            const uint64_t e = v.at("data_offsets").at(1).get<uint64_t>();
            if (e < b || e - b != numel * dtypeSize(t->dtype))
                return {ErrorCode::Malformed, T + "data offsets do not match shape x dtype"};
            if (e > dataSize) return {ErrorCode::Malformed, T + "data outside the file"};
            t->fileOffset = dataStart + b;
            t->nbytes = e - b;
        } catch (const json::exception& e) {
            return {ErrorCode::Malformed, T + "bad entry: " + e.what()};
        }
        if (!m_byName.emplace(name, t.get()).second)
            return {ErrorCode::Malformed, m_dir + ": tensor '" + name + "' is in two shards"};
        m_own.push_back(std::move(t));
    }
    return {};
}

const std::vector<std::string>& SourceCheckpoint::shardPaths() const {
    return m_ck ? m_ck->shardPaths() : m_paths;
}

std::vector<const TensorInfo*> SourceCheckpoint::tensors() const {
    std::vector<const TensorInfo*> v;
    for (const auto& [name, t] : m_byName)
        v.push_back(t);
    std::sort(v.begin(), v.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->name < b->name; });
    return v;
}

const TensorInfo* SourceCheckpoint::find(const std::string& name) const {
    auto it = m_byName.find(name);
    return it == m_byName.end() ? nullptr : it->second;
}

const TensorInfo* SourceCheckpoint::scaleOf(const TensorInfo& w) const {
    return find(w.name + "_scale_inv");
}

Status SourceCheckpoint::checkF8(const TensorInfo& w) const {
    const std::string T = m_dir + ": tensor '" + w.name + "': ";
    if (w.shape.size() != 2)
        return {ErrorCode::Unsupported, T + "F8_E4M3 tensors must be 2-D matrices"};
    const TensorInfo* s = scaleOf(w);
    if (!s)
        return {ErrorCode::Unsupported,
                T + "F8_E4M3 without its block scales '" + w.name + "_scale_inv'"};
    const std::vector<int64_t> want = {ceilDiv(w.shape[0], kF8Block),
                                       ceilDiv(w.shape[1], kF8Block)};
    if (s->shape != want || (s->dtype != DType::F32 && s->dtype != DType::BF16))
        return {ErrorCode::Malformed, T + "scale tensor '" + s->name +
                                          "' must be F32 or BF16 of shape [ceil(rows/128), "
                                          "ceil(cols/128)]"};
    return {};
}

Status SourceCheckpoint::readRaw(const TensorInfo& t, uint64_t offset, uint64_t nbytes,
                                 void* dst) const {
    if (m_ck) return m_ck->readRaw(t, offset, nbytes, dst);
    if (offset > t.nbytes || nbytes > t.nbytes - offset)
        return {ErrorCode::InvalidArgument, t.name + ": byte range outside the tensor"};
    return io_detail::preadAll(m_fds[size_t(t.shard)], t.fileOffset + offset, nbytes, dst,
                               m_paths[size_t(t.shard)] + ": tensor '" + t.name + "'");
}

Status SourceCheckpoint::readF32Range(const std::string& name, int64_t first, int64_t count,
                                      float* dst) const {
    const TensorInfo* t = find(name);
    if (!t) return {ErrorCode::NotFound, m_dir + ": no tensor '" + name + "'"};
    if (m_ck && t->dtype != DType::F8_E4M3) return m_ck->readF32Range(name, first, count, dst);
    const int64_t n = t->numel();
    if (first < 0 || count < 0 || first > n || count > n - first)
        return {ErrorCode::InvalidArgument, m_dir + ": tensor '" + name + "': range outside it"};
    constexpr int64_t kChunk = int64_t(1) << 16;
    switch (t->dtype) {
    case DType::F32:
        return readRaw(*t, uint64_t(first) * 4, uint64_t(count) * 4, dst);
    case DType::F16:
    case DType::BF16: {
        std::vector<uint16_t> buf(size_t(std::min(count, kChunk)));
        for (int64_t done = 0; done < count;) {
            const int64_t m = std::min(count - done, kChunk);
            COLI_RETURN_IF_ERROR(
                readRaw(*t, uint64_t(first + done) * 2, uint64_t(m) * 2, buf.data()));
            if (t->dtype == DType::F16)
                f16ToF32(buf.data(), dst + done, size_t(m));
            else
                bf16ToF32(buf.data(), dst + done, size_t(m));
            done += m;
        }
        return {};
    }
    case DType::F8_E4M3: {
        COLI_RETURN_IF_ERROR(checkF8(*t));
        const TensorInfo* s = scaleOf(*t);
        std::vector<float> scale;
        scale.resize(size_t(s->numel()));
        COLI_RETURN_IF_ERROR(readF32Range(s->name, 0, s->numel(), scale.data()));
        const int64_t cols = t->shape[1], scaleCols = s->shape[1];
        std::vector<uint8_t> buf(size_t(std::min(count, kChunk)));
        const auto& lut = f8Table();
        for (int64_t done = 0; done < count;) {
            const int64_t m = std::min(count - done, kChunk);
            COLI_RETURN_IF_ERROR(readRaw(*t, uint64_t(first + done), uint64_t(m), buf.data()));
            for (int64_t i = 0; i < m; ++i) {
                const int64_t e = first + done + i, r = e / cols, c = e % cols;
                dst[done + i] =
                    lut[buf[size_t(i)]] * scale[size_t((r / kF8Block) * scaleCols + c / kF8Block)];
            }
            done += m;
        }
        return {};
    }
    default:
        return {ErrorCode::Unsupported, m_dir + ": tensor '" + name + "': dtype " +
                                            dtypeName(t->dtype) + " cannot be read as f32"};
    }
}

} // namespace coli::convert
