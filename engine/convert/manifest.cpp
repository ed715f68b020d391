#include "convert/manifest.h"

#include "convert/plan.h"
#include "core/file_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace coli::convert {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

ojson partJson(const ExpertPart& p) {
    return {{"format", storedFormatName(p.format)},
            {"shape", p.shape},
            {"offset", p.offset},
            {"length", p.length}};
}

ojson filesJson(const std::vector<FileEntry>& fs) {
    ojson a = ojson::array();
    for (const FileEntry& f : fs)
        a.push_back({{"file", f.file}, {"bytes", f.bytes}, {"sha256", f.sha256}});
    return a;
}

// Typed access that reports the key path on failure (json exceptions name no key).
class Reader {
public:
    explicit Reader(std::string source) : m_src(std::move(source)) {}
    Status err(const std::string& where, const std::string& what) const {
        return {ErrorCode::Malformed, m_src + ": " + where + ": " + what};
    }
    Status str(const json& o, const char* key, const std::string& where, std::string* out) const {
        if (!o.is_object() || !o.contains(key) || !o[key].is_string())
            return err(where, std::string("'") + key + "' missing or not a string");
        *out = o[key].get<std::string>();
        return {};
    }
    Status u64(const json& o, const char* key, const std::string& where, uint64_t* out) const {
        if (!o.is_object() || !o.contains(key) || !o[key].is_number_unsigned())
            return err(where, std::string("'") + key + "' missing or not a non-negative integer");
        *out = o[key].get<uint64_t>();
        return {};
    }
    Status i32(const json& o, const char* key, const std::string& where, int* out) const {
        uint64_t v = 0;
        COLI_RETURN_IF_ERROR(u64(o, key, where, &v));
        if (v > uint64_t(1) << 30) return err(where, std::string("'") + key + "' out of range");
        *out = int(v);
        return {};
    }
    Status shape(const json& o, const std::string& where, std::vector<int64_t>* out) const {
        if (!o.is_object() || !o.contains("shape") || !o["shape"].is_array())
            return err(where, "'shape' missing or not an array");
        out->clear();
        for (const json& d : o["shape"]) {
            if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(1) << 40)
                return err(where, "'shape' holds a value that is not a dimension");
            out->push_back(int64_t(d.get<uint64_t>()));
        }
        return {};
    }
    Status format(const json& o, const std::string& where, StoredFormat* out) const {
        std::string s;
        COLI_RETURN_IF_ERROR(str(o, "format", where, &s));
        if (!parseStoredFormat(s, out)) return err(where, "unknown format '" + s + "'");
        return {};
    }
    Status files(const json& o, const char* key, std::vector<FileEntry>* out) const {
        if (!o.contains(key) || !o[key].is_array()) return err(key, "missing or not an array");
        for (size_t i = 0; i < o[key].size(); ++i) {
            const std::string w = std::string(key) + "[" + std::to_string(i) + "]";
            FileEntry f;
            COLI_RETURN_IF_ERROR(str(o[key][i], "file", w, &f.file));
            COLI_RETURN_IF_ERROR(u64(o[key][i], "bytes", w, &f.bytes));
            COLI_RETURN_IF_ERROR(str(o[key][i], "sha256", w, &f.sha256));
            out->push_back(std::move(f));
        }
        return {};
    }

private:
    std::string m_src;
};

int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s)
        n *= d;
    return n;
}

// Bytes a (format, logical shape) needs, treating the last dimension as the columns.
uint64_t bytesFor(StoredFormat f, const std::vector<int64_t>& shape, bool* ok) {
    const int64_t cols = shape.empty() ? 1 : shape.back();
    const int64_t n = numel(shape);
    *ok = !isQuantised(f) || (shape.size() == 2 && cols > 0 && cols % groupSize(f) == 0);
    if (!*ok) return 0;
    return storedBytes(f, cols > 0 ? n / cols : 0, cols);
}

// Empty when f's rows fill whole tiles (or f is not tiled); else why not (quant/formats.h).
std::string tileProblem(StoredFormat f, const std::vector<int64_t>& shape) {
    if (!isQuantised(f) || shape.size() != 2) return {};
    const int tile = quant::formatInfo(weightFormat(f)).rowTile;
    if (shape[0] % tile == 0) return {};
    return std::to_string(shape[0]) + " rows stored as " + storedFormatName(f) +
           ", whose tiles are " + std::to_string(tile) + " rows";
}

} // namespace

const ExpertEntry* Container::expert(int layer, int e) const {
    auto it = std::lower_bound(experts.begin(), experts.end(), std::make_pair(layer, e),
                               [](const ExpertEntry& x, const std::pair<int, int>& k) {
                                   return std::make_pair(x.layer, x.expert) < k;
                               });
    if (it == experts.end() || it->layer != layer || it->expert != e) return nullptr;
    return &*it;
}

const TensorEntry* Container::tensor(const std::string& name) const {
    for (const TensorEntry& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

std::string Container::describe() const {
    std::string s;
    for (const char* cls : {"experts", "dense", "embeddings", "lm_head", "norms", "router"}) {
        auto it = quantisation.find(cls);
        if (it == quantisation.end()) continue;
        s += (s.empty() ? "" : ", ") + it->second + " " + cls;
    }
    // Version 1 stored every matrix row after row; the same bits, read slower (container.md).
    if (formatVersion == 1)
        s += "; format version 1, rows not tiled: convert again to decode faster";
    return s;
}

std::string manifestToJson(const Container& c) {
    ojson j;
    j["format"] = "colibri";
    j["format_version"] = c.formatVersion;
    j["converter"] = c.converter;
    j["converter_version"] = c.converterVersion;
    j["alignment"] = kAlign;
    j["source"] = {{"model_id", c.modelId},
                   {"architecture", c.architecture},
                   {"files", filesJson(c.sourceFiles)}};
    ojson q = ojson::object();
    for (const char* cls :
         {"experts", "dense", "embeddings", "lm_head", "norms", "router", "other"}) {
        auto it = c.quantisation.find(cls);
        if (it != c.quantisation.end()) q[cls] = it->second;
    }
    j["quantisation"] = q;
    j["shards"] = filesJson(c.shards);
    ojson ts = ojson::array();
    for (const TensorEntry& t : c.tensors)
        ts.push_back({{"name", t.name},
                      {"class", tensorClassName(t.cls)},
                      {"file", t.file},
                      {"offset", t.offset},
                      {"length", t.length},
                      {"format", storedFormatName(t.format)},
                      {"shape", t.shape},
                      {"source_dtype", t.sourceDtype}});
    j["tensors"] = ts;
    ojson es = ojson::array();
    for (const ExpertEntry& e : c.experts)
        es.push_back({{"layer", e.layer},
                      {"expert", e.expert},
                      {"tensor", e.tensor},
                      {"file", e.file},
                      {"offset", e.offset},
                      {"length", e.length},
                      {"gate", partJson(e.gate)},
                      {"up", partJson(e.up)},
                      {"down", partJson(e.down)}});
    j["experts"] = es;
    return j.dump(1) + "\n";
}

Result<Container> parseManifest(const std::string& text, const std::string& src) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        return {ErrorCode::Malformed, src + ": not valid JSON: " + e.what()};
    }
    Reader r(src);
    if (!j.is_object()) return r.err("top level", "not a JSON object");
    Container c;
    std::string fmt;
    COLI_RETURN_IF_ERROR(r.str(j, "format", "top level", &fmt));
    if (fmt != "colibri") return r.err("format", "'" + fmt + "' is not 'colibri'");
    COLI_RETURN_IF_ERROR(r.i32(j, "format_version", "top level", &c.formatVersion));
    if (c.formatVersion > kContainerFormatVersion)
        return {ErrorCode::Unsupported,
                src + ": container format version " + std::to_string(c.formatVersion) +
                    " is newer than this engine reads (" + std::to_string(kContainerFormatVersion) +
                    "); convert the model again"};
    COLI_RETURN_IF_ERROR(r.str(j, "converter", "top level", &c.converter));
    COLI_RETURN_IF_ERROR(r.i32(j, "converter_version", "top level", &c.converterVersion));
    if (!j.contains("source") || !j["source"].is_object()) return r.err("source", "missing");
    COLI_RETURN_IF_ERROR(r.str(j["source"], "model_id", "source", &c.modelId));
    COLI_RETURN_IF_ERROR(r.str(j["source"], "architecture", "source", &c.architecture));
    COLI_RETURN_IF_ERROR(r.files(j["source"], "files", &c.sourceFiles));
    if (!j.contains("quantisation") || !j["quantisation"].is_object())
        return r.err("quantisation", "missing or not an object");
    for (auto it = j["quantisation"].begin(); it != j["quantisation"].end(); ++it) {
        TensorClass cls;
        StoredFormat f;
        if (!parseTensorClass(it.key(), &cls))
            return r.err("quantisation", "unknown tensor class '" + it.key() + "'");
        if (!it.value().is_string() || !parseStoredFormat(it.value().get<std::string>(), &f))
            return r.err("quantisation." + it.key(), "not a known format name");
        c.quantisation[it.key()] = it.value().get<std::string>();
    }
    COLI_RETURN_IF_ERROR(r.files(j, "shards", &c.shards));
    std::map<std::string, uint64_t> shardBytes;
    for (const FileEntry& f : c.shards) {
        if (f.file.empty() || f.file.find('/') != std::string::npos || f.file == "..")
            return r.err("shards", "file name '" + f.file + "' is not a plain file name");
        shardBytes[f.file] = f.bytes;
    }
    auto inShard = [&](const std::string& where, const std::string& file, uint64_t off,
                       uint64_t len) -> Status {
        auto it = shardBytes.find(file);
        if (it == shardBytes.end()) return r.err(where, "file '" + file + "' is not a shard");
        if (off > it->second || len > it->second - off)
            return r.err(where, "bytes [" + std::to_string(off) + ", +" + std::to_string(len) +
                                    ") outside " + file + " (" + std::to_string(it->second) +
                                    " bytes)");
        return {};
    };

    if (!j.contains("tensors") || !j["tensors"].is_array())
        return r.err("tensors", "missing or not an array");
    for (size_t i = 0; i < j["tensors"].size(); ++i) {
        const json& o = j["tensors"][i];
        std::string w = "tensors[" + std::to_string(i) + "]";
        TensorEntry t;
        COLI_RETURN_IF_ERROR(r.str(o, "name", w, &t.name));
        w += " ('" + t.name + "')";
        std::string cls;
        COLI_RETURN_IF_ERROR(r.str(o, "class", w, &cls));
        if (!parseTensorClass(cls, &t.cls)) return r.err(w, "unknown class '" + cls + "'");
        COLI_RETURN_IF_ERROR(r.str(o, "file", w, &t.file));
        COLI_RETURN_IF_ERROR(r.u64(o, "offset", w, &t.offset));
        COLI_RETURN_IF_ERROR(r.u64(o, "length", w, &t.length));
        COLI_RETURN_IF_ERROR(r.format(o, w, &t.format));
        COLI_RETURN_IF_ERROR(r.shape(o, w, &t.shape));
        COLI_RETURN_IF_ERROR(r.str(o, "source_dtype", w, &t.sourceDtype));
        COLI_RETURN_IF_ERROR(inShard(w, t.file, t.offset, t.length));
        bool ok = true;
        if (bytesFor(t.format, t.shape, &ok) != t.length || !ok)
            return r.err(w, "length " + std::to_string(t.length) + " does not match format " +
                                storedFormatName(t.format) + " and its shape");
        if (const std::string why = tileProblem(t.format, t.shape); !why.empty())
            return r.err(w, why);
        c.tensors.push_back(std::move(t));
    }

    if (!j.contains("experts") || !j["experts"].is_array())
        return r.err("experts", "missing or not an array");
    for (size_t i = 0; i < j["experts"].size(); ++i) {
        const json& o = j["experts"][i];
        const std::string w = "experts[" + std::to_string(i) + "]";
        ExpertEntry e;
        COLI_RETURN_IF_ERROR(r.i32(o, "layer", w, &e.layer));
        COLI_RETURN_IF_ERROR(r.i32(o, "expert", w, &e.expert));
        COLI_RETURN_IF_ERROR(r.str(o, "tensor", w, &e.tensor));
        COLI_RETURN_IF_ERROR(r.str(o, "file", w, &e.file));
        COLI_RETURN_IF_ERROR(r.u64(o, "offset", w, &e.offset));
        COLI_RETURN_IF_ERROR(r.u64(o, "length", w, &e.length));
        COLI_RETURN_IF_ERROR(inShard(w, e.file, e.offset, e.length));
        if (e.offset % kAlign != 0 || e.length % kAlign != 0)
            return r.err(w, "offset " + std::to_string(e.offset) + " or length " +
                                std::to_string(e.length) + " is not a multiple of " +
                                std::to_string(kAlign));
        for (auto [key, part] :
             {std::pair{"gate", &e.gate}, std::pair{"up", &e.up}, std::pair{"down", &e.down}}) {
            const std::string pw = w + "." + key;
            if (!o.contains(key) || !o[key].is_object()) return r.err(pw, "missing");
            COLI_RETURN_IF_ERROR(r.format(o[key], pw, &part->format));
            COLI_RETURN_IF_ERROR(r.shape(o[key], pw, &part->shape));
            COLI_RETURN_IF_ERROR(r.u64(o[key], "offset", pw, &part->offset));
            COLI_RETURN_IF_ERROR(r.u64(o[key], "length", pw, &part->length));
            bool ok = true;
            if (!isQuantised(part->format) ||
                bytesFor(part->format, part->shape, &ok) != part->length || !ok)
                return r.err(pw, "length does not match a quantised format and its shape");
            if (const std::string why = tileProblem(part->format, part->shape); !why.empty())
                return r.err(pw, why);
            if (part->offset > e.length || part->length > e.length - part->offset)
                return r.err(pw, "outside the expert's blob");
        }
        c.experts.push_back(std::move(e));
    }
    std::sort(c.experts.begin(), c.experts.end(), [](const ExpertEntry& a, const ExpertEntry& b) {
        return std::make_pair(a.layer, a.expert) < std::make_pair(b.layer, b.expert);
    });
    for (size_t i = 1; i < c.experts.size(); ++i)
        if (c.experts[i].layer == c.experts[i - 1].layer &&
            c.experts[i].expert == c.experts[i - 1].expert)
            return r.err("experts", "layer " + std::to_string(c.experts[i].layer) + " expert " +
                                        std::to_string(c.experts[i].expert) + " listed twice");
    return c;
}

bool isContainerDir(const std::string& dir) {
    // Any entry of that name: a named pipe or broken link there is then refused by name when
    // opened, not taken for a Hugging Face checkpoint.
    std::error_code ec;
    return fs::exists(fs::symlink_status(fs::path(dir) / kManifestName, ec));
}

Result<Container> openContainer(const std::string& dir) {
    const std::string path = (fs::path(dir) / kManifestName).string();
    auto text = readTextFile(path);
    if (!text) return text.status();
    auto c = parseManifest(text.value(), path);
    if (!c) return c.status();
    c->dir = dir;
    for (const FileEntry& f : c->shards) {
        const fs::path p = fs::path(dir) / f.file;
        std::error_code ec;
        const uintmax_t size = fs::file_size(p, ec);
        if (ec)
            return {ErrorCode::NotFound,
                    p.string() + ": shard listed in " + path + " is missing: " + ec.message()};
        if (size != f.bytes)
            return {ErrorCode::Malformed,
                    p.string() + ": " + std::to_string(size) + " bytes, but " + path + " says " +
                        std::to_string(f.bytes) + " (incomplete copy or changed file)"};
    }
    return c;
}

} // namespace coli::convert
