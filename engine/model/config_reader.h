#pragma once
// Internal to engine/model: the typed config.json reader shared by config.cpp and the DeepSeek
// part (config_deepseek.cpp).
#include "core/status.h"
#include "model/config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace coli::config_detail {

using Json = nlohmann::json;

// Reads typed keys and turns type errors into Malformed naming the file and the key.
class Reader {
public:
    Reader(const Json& j, const std::string& source) : m_j(j), m_source(source) {}

    bool has(const char* key) const { return m_j.contains(key) && !m_j.at(key).is_null(); }

    Status getInt(const char* key, int def, int* out) const {
        *out = def;
        if (!has(key)) return {};
        const Json& v = m_j.at(key);
        if (!v.is_number_integer()) return bad(key, "must be an integer");
        int64_t x = v.get<int64_t>();
        if (x < INT32_MIN || x > INT32_MAX) return bad(key, "is out of range");
        *out = static_cast<int>(x);
        return {};
    }
    Status getFloat(const char* key, float def, float* out) const {
        *out = def;
        if (!has(key)) return {};
        const Json& v = m_j.at(key);
        if (!v.is_number()) return bad(key, "must be a number");
        double x = v.get<double>();
        if (!std::isfinite(x)) return bad(key, "must be finite");
        *out = static_cast<float>(x);
        return {};
    }
    Status getBool(const char* key, bool def, bool* out) const {
        *out = def;
        if (!has(key)) return {};
        const Json& v = m_j.at(key);
        if (!v.is_boolean()) return bad(key, "must be true or false");
        *out = v.get<bool>();
        return {};
    }
    Status getString(const char* key, const std::string& def, std::string* out) const {
        *out = def;
        if (!has(key)) return {};
        const Json& v = m_j.at(key);
        if (!v.is_string()) return bad(key, "must be a string");
        *out = v.get<std::string>();
        return {};
    }
    Status bad(const std::string& key, const std::string& what) const {
        return {ErrorCode::Malformed, m_source + ": key '" + key + "' " + what};
    }
    const Json& json() const { return m_j; }

private:
    const Json& m_j;
    std::string m_source;
};

inline Status positive(const Reader& r, const char* key, int v) {
    if (v <= 0) return r.bad(key, "must be > 0 (got " + std::to_string(v) + ")");
    return {};
}

// Upper bounds far above any published model; a value past them is a typo or a corrupt file, and
// refusing it here keeps later planning (one entry per layer and expert) from exhausting memory.
constexpr int kMaxLayers = 1024;
constexpr int kMaxExperts = 65536;
constexpr int kMaxWidth = 1 << 20; // hidden_size, intermediate sizes, head_dim, heads
constexpr int kMaxVocab = 1 << 24;

inline Status atMost(const Reader& r, const char* key, int v, int limit) {
    if (v > limit)
        return r.bad(key, "is " + std::to_string(v) + ", more than the supported " +
                              std::to_string(limit) + " (a corrupt or mistyped config.json?)");
    return {};
}

// rope_theta and rope_scaling / rope_parameters into c (config.cpp). defaultTheta: the family's.
Status parseRope(const Reader& r, float defaultTheta, ModelConfig& c);

// The DeepSeek-V2/V3 keys (config_deepseek.cpp): MLA, routing, shared experts, dense layers.
// Called by parseConfig after the keys every family shares.
Status parseDeepseek(const Reader& r, const std::string& sourceName, ModelConfig& c);

} // namespace coli::config_detail
