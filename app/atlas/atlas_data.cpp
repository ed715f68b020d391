#include "atlas/atlas_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace coli::atlas {
namespace {

// splitmix64: a tiny, fully specified generator (the same sequence everywhere).
uint64_t next(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
double uniform(uint64_t& s) {
    return double(next(s) >> 11) * 0x1.0p-53;
} // [0, 1)
double gaussian(uint64_t& s) {
    const double u = 1.0 - uniform(s), v = uniform(s);
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

} // namespace

AtlasData syntheticAtlas(int nLayers, int nExperts, int nTopics, uint64_t seed) {
    nLayers = std::max(1, nLayers);
    nExperts = std::max(1, nExperts);
    nTopics = std::clamp(nTopics, 1, 16);
    AtlasData d;
    d.nLayers = nLayers;
    d.nExperts = nExperts;
    for (int t = 0; t < nTopics; ++t)
        d.topics.push_back("topic " + std::to_string(t + 1));
    // Topic centres: a Fibonacci sphere of radius 100 (evenly spread, deterministic).
    std::vector<std::array<double, 3>> centre(nTopics);
    for (int t = 0; t < nTopics; ++t) {
        const double y = nTopics == 1 ? 0.0 : 1.0 - 2.0 * (t + 0.5) / nTopics;
        const double r = std::sqrt(1.0 - y * y), phi = t * 2.399963229728653;
        centre[t] = {100 * r * std::cos(phi), 100 * y, 100 * r * std::sin(phi)};
    }
    uint64_t rng = seed;
    const double balanced = 1.0 / nTopics;
    d.experts.reserve(size_t(nLayers) * nExperts);
    for (int l = 0; l < nLayers; ++l)
        for (int e = 0; e < nExperts; ++e) {
            AtlasExpert x;
            x.layer = l;
            x.expert = e;
            const bool specialist = uniform(rng) < 0.66;
            const int t = int(next(rng) % uint64_t(nTopics));
            std::vector<double> s(nTopics);
            double sum = 0;
            for (int i = 0; i < nTopics; ++i)
                sum += s[i] = 0.5 + uniform(rng);
            if (specialist) {
                s[t] += sum * (2.5 + 2 * uniform(rng)); // share >= ~3.5 / (3.5 + 1) of one topic
                sum = 0;
                for (double v : s)
                    sum += v;
            }
            for (double v : s)
                x.shares.push_back(float(v / sum));
            const int dominant =
                int(std::max_element(x.shares.begin(), x.shares.end()) - x.shares.begin());
            x.specialist = nTopics > 1 && x.shares[dominant] >= 3 * balanced;
            x.topic = x.specialist ? dominant : -1;
            const double sigma = x.specialist ? 13.0 : 32.0;
            const auto c = x.specialist ? centre[dominant] : std::array<double, 3>{0, 0, 0};
            x.x = float(c[0] + sigma * gaussian(rng));
            x.y = float(c[1] + sigma * gaussian(rng));
            x.z = float(c[2] + sigma * gaussian(rng));
            d.experts.push_back(std::move(x));
        }
    return d;
}

Result<AtlasData> parseAtlasJson(std::string_view text, const std::string& name) {
    using nlohmann::json;
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    auto bad = [&](const std::string& what) {
        return Result<AtlasData>(ErrorCode::Malformed, name + ": " + what);
    };
    if (j.is_discarded()) return bad("not valid JSON");
    if (!j.is_object()) return bad("the top level is not an object");
    if (j.value("format", std::string()) != "colibri-atlas")
        return bad("\"format\" is not \"colibri-atlas\"");
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
        return bad("unsupported \"version\" (this app reads version 1)");
    AtlasData d;
    if (j.contains("model") && j["model"].is_string()) d.model = j["model"];
    if (!j.contains("topics") || !j["topics"].is_array()) return bad("no \"topics\" array");
    for (const json& t : j["topics"]) {
        if (!t.is_string()) return bad("a topic label is not a string");
        d.topics.push_back(t.get<std::string>());
    }
    for (const char* key : {"layers", "experts_per_layer"})
        if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 1 ||
            j[key].get<int64_t>() > 1000000)
            return bad(std::string("\"") + key + "\" is not a positive integer");
    d.nLayers = j["layers"].get<int>();
    d.nExperts = j["experts_per_layer"].get<int>();
    if (!j.contains("experts") || !j["experts"].is_array()) return bad("no \"experts\" array");
    const int nTopics = int(d.topics.size());
    std::set<std::pair<int, int>> seen;
    size_t i = 0;
    for (const json& e : j["experts"]) {
        const std::string at = "experts[" + std::to_string(i++) + "]: ";
        if (!e.is_object()) return bad(at + "not an object");
        AtlasExpert x;
        if (!e.contains("layer") || !e["layer"].is_number_integer() || !e.contains("expert") ||
            !e["expert"].is_number_integer())
            return bad(at + "\"layer\" and \"expert\" must be integers");
        const int64_t l = e["layer"], ex = e["expert"];
        if (l < 0 || l >= d.nLayers || ex < 0 || ex >= d.nExperts)
            return bad(at + "(layer " + std::to_string(l) + ", expert " + std::to_string(ex) +
                       ") is outside the model's " + std::to_string(d.nLayers) + " x " +
                       std::to_string(d.nExperts));
        x.layer = int(l);
        x.expert = int(ex);
        if (!seen.insert({x.layer, x.expert}).second)
            return bad(at + "(layer " + std::to_string(l) + ", expert " + std::to_string(ex) +
                       ") is listed twice");
        const json& p = e.value("position", json());
        if (!p.is_array() || p.size() != 3 || !p[0].is_number() || !p[1].is_number() ||
            !p[2].is_number())
            return bad(at + "\"position\" must be [x, y, z]");
        x.x = p[0].get<float>();
        x.y = p[1].get<float>();
        x.z = p[2].get<float>();
        if (!std::isfinite(x.x) || !std::isfinite(x.y) || !std::isfinite(x.z))
            return bad(at + "\"position\" is not finite");
        const json& dt = e.value("dominant_topic", json());
        if (dt.is_null()) {
            x.topic = -1;
        } else if (!dt.is_number_integer() || dt.get<int64_t>() < -1 ||
                   dt.get<int64_t>() >= nTopics) {
            return bad(at + "\"dominant_topic\" is not a topic index (or -1 / null)");
        } else {
            x.topic = dt.get<int>();
        }
        x.specialist = e.value("specialist", false);
        if (x.topic < 0) x.specialist = false; // a generalist has no specialty
        if (e.contains("shares")) {
            if (!e["shares"].is_array() || int(e["shares"].size()) != nTopics)
                return bad(at + "\"shares\" must have one number per topic");
            for (const json& s : e["shares"]) {
                if (!s.is_number()) return bad(at + "a share is not a number");
                x.shares.push_back(s.get<float>());
            }
        }
        d.experts.push_back(std::move(x));
    }
    return d;
}

Result<AtlasData> readAtlasJson(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Result<AtlasData>(ErrorCode::NotFound, path + ": cannot open the file");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Result<AtlasData>(ErrorCode::Io, path + ": read failed");
    return parseAtlasJson(ss.str(), path);
}

std::string toAtlasJson(const AtlasData& d) {
    nlohmann::json j;
    j["format"] = "colibri-atlas";
    j["version"] = 1;
    j["model"] = d.model;
    j["topics"] = d.topics;
    j["layers"] = d.nLayers;
    j["experts_per_layer"] = d.nExperts;
    nlohmann::json list = nlohmann::json::array();
    for (const AtlasExpert& x : d.experts) {
        nlohmann::json e;
        e["layer"] = x.layer;
        e["expert"] = x.expert;
        e["position"] = {x.x, x.y, x.z};
        e["dominant_topic"] = x.topic;
        e["specialist"] = x.specialist;
        e["shares"] = x.shares;
        list.push_back(std::move(e));
    }
    j["experts"] = std::move(list);
    return j.dump();
}

void routeSyntheticToken(const AtlasData& d, int topic, int k, uint64_t& rng,
                         std::vector<uint32_t>& hits) {
    const size_t n = size_t(d.nLayers) * d.nExperts;
    if (hits.size() != n) hits.assign(n, 0);
    if (d.nExperts <= 0) return;
    k = std::clamp(k, 0, d.nExperts);
    // The topic's specialists per layer (the synthetic atlas lists experts layer by layer).
    std::vector<std::vector<int>> byLayer(d.nLayers);
    for (const AtlasExpert& x : d.experts)
        if (x.topic == topic && x.specialist) byLayer[x.layer].push_back(x.expert);
    std::vector<int> picked;
    for (int l = 0; l < d.nLayers; ++l) {
        picked.clear();
        const auto& spec = byLayer[l];
        const int fromTopic = std::min(k / 2, int(spec.size()));
        while (int(picked.size()) < fromTopic) {
            const int e = spec[next(rng) % spec.size()];
            if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
        }
        while (int(picked.size()) < k) {
            const int e = int(next(rng) % uint64_t(d.nExperts));
            if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
        }
        for (int e : picked)
            ++hits[size_t(l) * d.nExperts + e];
    }
}

} // namespace coli::atlas
