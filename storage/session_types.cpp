#include "storage/session_types.h"

#include <nlohmann/json.hpp>

namespace coli::storage {

namespace {

constexpr const char* kRoleNames[] = {"system", "user", "assistant"};
constexpr const char* kStopNames[] = {"eos",       "max_tokens",   "stop_string",
                                      "cancelled", "context_full", "failed"};

} // namespace

const char* roleName(Role r) {
    return kRoleNames[int(r)];
}

std::optional<Role> parseRole(std::string_view s) {
    for (int i = 0; i < 3; ++i)
        if (s == kRoleNames[i]) return Role(i);
    return std::nullopt;
}

const char* stopReasonName(StopReason r) {
    return kStopNames[int(r)];
}

std::optional<StopReason> parseStopReason(std::string_view s) {
    for (int i = 0; i < 6; ++i)
        if (s == kStopNames[i]) return StopReason(i);
    return std::nullopt;
}

std::string samplingToJson(const SamplingSettings& s) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (s.temperature) j["temperature"] = *s.temperature;
    if (s.topK) j["top_k"] = *s.topK;
    if (s.topP) j["top_p"] = *s.topP;
    if (s.minP) j["min_p"] = *s.minP;
    if (s.repeatPenalty) j["repeat_penalty"] = *s.repeatPenalty;
    if (s.repeatLastN) j["repeat_last_n"] = *s.repeatLastN;
    if (s.maxNewTokens) j["max_new_tokens"] = *s.maxNewTokens;
    // Non-finite values become null (JSON has no NaN); samplingFromJson refuses them.
    return j.dump();
}

std::optional<SamplingSettings> samplingFromJson(std::string_view json) {
    const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt; // also a parse error (discarded value)
    SamplingSettings s;
    bool ok = true;
    auto real = [&](const char* key, std::optional<double>& out) {
        auto it = j.find(key);
        if (it == j.end()) return;
        if (!it->is_number()) {
            ok = false;
            return;
        }
        out = it->get<double>();
    };
    auto integer = [&](const char* key, std::optional<int>& out) {
        auto it = j.find(key);
        if (it == j.end()) return;
        if (!it->is_number_integer()) {
            ok = false;
            return;
        }
        const int64_t v = it->get<int64_t>();
        if (v < INT32_MIN || v > INT32_MAX) {
            ok = false;
            return;
        }
        out = int(v);
    };
    real("temperature", s.temperature);
    integer("top_k", s.topK);
    real("top_p", s.topP);
    real("min_p", s.minP);
    real("repeat_penalty", s.repeatPenalty);
    integer("repeat_last_n", s.repeatLastN);
    integer("max_new_tokens", s.maxNewTokens);
    if (!ok) return std::nullopt;
    return s;
}

double RunRecord::expertHitRate() const {
    if (tiers.routed == 0) return 0;
    const double ready = double(tiers.hitsVram) + double(tiers.hitsPinned) +
                         double(tiers.hitsCache) -
                         double(tiers.inFlightHits); // found being read is not a hit
    return ready / double(tiers.routed);
}

double RunRecord::mibReadPerDecodeToken() const {
    uint64_t bytes = tiers.bytesRead, tokens = tiers.tokens;
    if (tiers.prefill && tiers.prefill->tokens <= tokens && tiers.prefill->bytesRead <= bytes) {
        bytes -= tiers.prefill->bytesRead;
        tokens -= tiers.prefill->tokens;
    }
    if (tokens == 0) return 0;
    return double(bytes) / (1024.0 * 1024.0) / double(tokens);
}

double RunRecord::mibReadPerPromptToken() const {
    if (!tiers.prefill || tiers.prefill->tokens == 0) return -1;
    return double(tiers.prefill->bytesRead) / (1024.0 * 1024.0) / double(tiers.prefill->tokens);
}

} // namespace coli::storage
