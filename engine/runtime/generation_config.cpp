#include "runtime/generation_config.h"

#include "core/file_text.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <limits>

namespace coli {
namespace {

using nlohmann::json;

// eos_token_id / bos_token_id: an int, a list of ints, or null (= none).
Status readIdList(const json& j, const char* key, const std::string& source,
                  std::vector<int32_t>& out) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    auto one = [&](const json& v) -> Status {
        if (!v.is_number_integer())
            return {ErrorCode::Malformed,
                    source + ": '" + key + "' must be an integer or a list of integers"};
        const auto id = v.get<int64_t>();
        if (id < 0 || id > std::numeric_limits<int32_t>::max())
            return {ErrorCode::Malformed,
                    source + ": '" + key + "' value " + std::to_string(id) + " out of range"};
        out.push_back(static_cast<int32_t>(id));
        return {};
    };
    if (it->is_array()) {
        for (const auto& v : *it)
            COLI_RETURN_IF_ERROR(one(v));
        return {};
    }
    return one(*it);
}

Status readNumber(const json& j, const char* key, const std::string& source, double& out,
                  bool& present) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_number())
        return {ErrorCode::Malformed, source + ": '" + key + "' must be a number"};
    out = it->get<double>();
    if (!std::isfinite(out))
        return {ErrorCode::Malformed, source + ": '" + key + "' must be finite"};
    present = true;
    return {};
}

Result<json> parseObject(const std::string& text, const std::string& source) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status(ErrorCode::Malformed, source + ": invalid JSON");
    if (!j.is_object()) return Status(ErrorCode::Malformed, source + ": not a JSON object");
    return j;
}

} // namespace

Result<GenerationConfig> parseGenerationConfig(const std::string& jsonText,
                                               const std::string& configJsonText,
                                               const std::string& sourceName) {
    GenerationConfig gc;
    json g = json::object();
    if (!jsonText.empty()) {
        auto parsed = parseObject(jsonText, sourceName);
        if (!parsed) return parsed.status();
        g = std::move(parsed.value());
    }
    COLI_RETURN_IF_ERROR(readIdList(g, "eos_token_id", sourceName, gc.eosIds));
    std::vector<int32_t> bos;
    COLI_RETURN_IF_ERROR(readIdList(g, "bos_token_id", sourceName, bos));

    // transformers' GenerationConfig.from_model_config: config.json supplies the ids the
    // generation config lacks.
    if (!configJsonText.empty() && (!g.contains("eos_token_id") || bos.empty())) {
        const std::string cfgName = "config.json";
        auto cfg = parseObject(configJsonText, cfgName);
        if (!cfg) return cfg.status();
        if (!g.contains("eos_token_id"))
            COLI_RETURN_IF_ERROR(readIdList(cfg.value(), "eos_token_id", cfgName, gc.eosIds));
        if (bos.empty())
            COLI_RETURN_IF_ERROR(readIdList(cfg.value(), "bos_token_id", cfgName, bos));
    }
    if (!bos.empty()) gc.bosId = bos.front();

    // Sampling defaults, with transformers' values for the keys a file leaves out. A sampling key
    // we cannot use (wrong type, out of the sampler's range) is a warning and counts as absent:
    // the user may override it anyway, and the EOS ids above are what really must be right.
    SamplerParams d;
    d.temperature = 1.0f;
    d.topK = 50;
    d.topP = 1.0f;
    d.minP = 0.0f;
    d.repeatPenalty = 1.0f;
    bool present = false;
    auto warn = [&](const std::string& key, const std::string& what) {
        gc.warnings.push_back(sourceName + ": '" + key + "' " + what +
                              "; ignored (the built-in default is used)");
    };
    // Sets one key on top of valid values and keeps it only when the sampler accepts it.
    auto number = [&](const char* key, auto apply) {
        double v = 0;
        bool have = false;
        if (Status s = readNumber(g, key, sourceName, v, have); !s) {
            warn(key, std::string(g.at(key).is_number() ? "must be finite" : "must be a number"));
            return;
        }
        if (!have) return;
        SamplerParams trial;
        std::string why;
        if (!apply(trial, v, why)) {
            warn(key, why);
            return;
        }
        if (Status s = validate(trial); !s) {
            char got[64];
            std::snprintf(got, sizeof got, "%g", v);
            warn(key, std::string("value ") + got + " is out of range");
            return;
        }
        apply(d, v, why);
        present = true;
    };
    number("temperature", [](SamplerParams& p, double v, std::string&) {
        p.temperature = static_cast<float>(v);
        return true;
    });
    number("top_k", [](SamplerParams& p, double v, std::string& why) {
        if (v < 0 || v != std::floor(v) || v > std::numeric_limits<int>::max()) {
            why = "must be a non-negative integer";
            return false;
        }
        p.topK = static_cast<int>(v);
        return true;
    });
    number("top_p", [](SamplerParams& p, double v, std::string&) {
        p.topP = static_cast<float>(v);
        return true;
    });
    number("min_p", [](SamplerParams& p, double v, std::string&) {
        p.minP = static_cast<float>(v);
        return true;
    });
    number("repetition_penalty", [](SamplerParams& p, double v, std::string&) {
        p.repeatPenalty = static_cast<float>(v);
        return true;
    });
    if (const auto it = g.find("do_sample"); it != g.end() && !it->is_null()) {
        if (!it->is_boolean()) {
            warn("do_sample", "must be a boolean");
        } else {
            present = true;
            if (!it->get<bool>()) d.temperature = 0.0f;
        }
    }
    if (present) {
        // Each key was checked alone; a combination the sampler refuses drops them all.
        if (Status s = validate(d); !s) {
            gc.warnings.push_back(sourceName + ": sampling defaults rejected (" + s.message() +
                                  "); the built-in defaults are used");
        } else {
            gc.hasSamplingDefaults = true;
            gc.defaults = d;
        }
    }
    return gc;
}

Result<GenerationConfig> loadGenerationConfig(const std::string& dir) {
    const std::string genPath = dir + "/generation_config.json";
    const std::string cfgPath = dir + "/config.json";
    std::string genText, cfgText;
    auto g = readOptionalFile(genPath);
    if (!g) return g.status();
    auto c = readOptionalFile(cfgPath);
    if (!c) return c.status();
    return parseGenerationConfig(g.value().value_or(""), c.value().value_or(""), genPath);
}

} // namespace coli
