#include "cachesim/trace_reader.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace coli::cachesim {
namespace {

constexpr int kMaxLayers = 4096;
constexpr int kMaxExperts = 65536;

Status malformed(const std::string& name, int64_t line, const std::string& what) {
    return {ErrorCode::Malformed, fmt::format("{}:{}: {}", name, line, what)};
}

// An integer in [lo, hi] under `key`, or an error message.
std::string readInt(const nlohmann::json& j, const char* key, int lo, int hi, int& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer())
        return fmt::format("header: \"{}\" must be an integer", key);
    const int64_t v = it->get<int64_t>();
    if (v < lo || v > hi)
        return fmt::format("header: \"{}\" = {} out of range [{}, {}]", key, v, lo, hi);
    out = int(v);
    return "";
}

std::string readHeader(const nlohmann::json& j, RoutingTraceFile& t) {
    if (!j.is_object()) return "header: expected a JSON object";
    auto f = j.find("format");
    if (f == j.end() || !f->is_string() || *f != "coli-routing-trace")
        return fmt::format("header: format {} is not \"coli-routing-trace\"",
                           f == j.end() ? "missing" : f->dump());
    auto v = j.find("version");
    if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != 1)
        return fmt::format("header: version {} is not 1", v == j.end() ? "missing" : v->dump());
    std::string e;
    if (!(e = readInt(j, "n_layers", 1, kMaxLayers, t.nLayers)).empty()) return e;
    if (!(e = readInt(j, "n_experts", 1, kMaxExperts, t.nExperts)).empty()) return e;
    if (!(e = readInt(j, "top_k", 1, t.nExperts, t.topK)).empty()) return e;
    auto m = j.find("moe_layers");
    if (m == j.end() || !m->is_array() || m->empty())
        return "header: \"moe_layers\" must be a non-empty list";
    for (const auto& l : *m) {
        if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= t.nLayers)
            return fmt::format("header: moe_layers entry {} is not a layer in [0, {})", l.dump(),
                               t.nLayers);
        const int layer = int(l.get<int64_t>());
        if (!t.moeLayers.empty() && layer <= t.moeLayers.back())
            return "header: moe_layers must be ascending without repeats";
        t.moeLayers.push_back(layer);
    }
    return "";
}

std::string readRecord(const nlohmann::json& j, RoutingTraceFile& t) {
    if (!j.is_object()) return "expected a JSON object (a token record)";
    auto ex = j.find("experts");
    if (ex == j.end() || !ex->is_array() || ex->size() != t.moeLayers.size())
        return fmt::format("\"experts\" must be a list of {} lists (one per MoE layer)",
                           t.moeLayers.size());
    const size_t start = t.experts.size();
    for (size_t i = 0; i < ex->size(); ++i) {
        const auto& layer = (*ex)[i];
        if (!layer.is_array() || layer.size() != size_t(t.topK))
            return fmt::format("experts of MoE layer {} must be a list of top_k = {} ids", i,
                               t.topK);
        const size_t first = t.experts.size();
        for (const auto& id : layer) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= t.nExperts)
                return fmt::format("expert {} out of range [0, {}) (MoE layer {})", id.dump(),
                                   t.nExperts, i);
            const int32_t e = int32_t(id.get<int64_t>());
            if (std::find(t.experts.begin() + first, t.experts.end(), e) != t.experts.end())
                return fmt::format("expert {} repeated in MoE layer {}", e, i);
            t.experts.push_back(e);
        }
    }
    auto g = j.find("generated");
    if (g != j.end() && !g->is_boolean()) {
        t.experts.resize(start);
        return "\"generated\" must be true or false";
    }
    t.generated.push_back(g != j.end() && g->get<bool>() ? 1 : 0);
    return "";
}

} // namespace

Result<RoutingTraceFile> parseRoutingTrace(std::istream& in, const std::string& name) {
    RoutingTraceFile t;
    t.name = name;
    std::string text;
    int64_t line = 0;
    bool haveHeader = false;
    while (std::getline(in, text)) {
        ++line;
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue; // blank line
        nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) return malformed(name, line, "invalid JSON");
        const std::string e = haveHeader ? readRecord(j, t) : readHeader(j, t);
        if (!e.empty()) return malformed(name, line, e);
        haveHeader = true;
    }
    if (in.bad()) return Status(ErrorCode::Io, fmt::format("{}: read error", name));
    if (!haveHeader) return malformed(name, line, "empty trace (no header line)");
    if (t.nTokens() == 0) return malformed(name, line, "no token records after the header");
    return t;
}

Result<RoutingTraceFile> readRoutingTrace(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(ErrorCode::NotFound, fmt::format("{}: cannot open", path));
    return parseRoutingTrace(in, path);
}

} // namespace coli::cachesim
