#include "storage/session_export.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

namespace coli::storage {

namespace {

using Json = nlohmann::ordered_json;

// "2026-12-02T00:04:58.123Z" (UTC).
std::string isoTime(int64_t unixMs) {
    const int64_t secs = unixMs >= 0 ? unixMs / 1000 : (unixMs - 999) / 1000;
    const int ms = int(unixMs - secs * 1000);
    const std::time_t t = std::time_t(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    return buf;
}

Json samplingJson(const SamplingSettings& s) {
    // The stored form (samplingToJson) is the exported form.
    return Json::parse(samplingToJson(s), nullptr, false);
}

Json seedJson(std::optional<uint64_t> seed) {
    return seed ? Json(*seed) : Json(nullptr);
}

Json runJson(const RunRecord& r) {
    const RunTierCounters& t = r.tiers;
    return Json{{"created_ms", r.createdMs},
                {"prompt_tokens", r.promptTokens},
                {"reused_tokens", r.reusedTokens},
                {"generated_tokens", r.generatedTokens},
                {"tokens_per_second", r.tokensPerSecond},
                {"ttft_seconds", r.ttftSeconds},
                {"prefill_seconds", r.prefillSeconds},
                {"decode_seconds", r.decodeSeconds},
                {"time_split",
                 {{"attention_s", r.split.attentionS},
                  {"expert_ffn_s", r.split.expertFfnS},
                  {"expert_wait_s", r.split.expertWaitS},
                  {"sampling_s", r.split.samplingS},
                  {"other_s", r.split.otherS}}},
                {"tiers",
                 {{"routed", t.routed},
                  {"hits_pinned", t.hitsPinned},
                  {"hits_cache", t.hitsCache},
                  {"in_flight_hits", t.inFlightHits},
                  {"misses", t.misses},
                  {"hits_vram", t.hitsVram},
                  {"bytes_read", t.bytesRead},
                  {"evictions", t.evictions},
                  {"prefetch_issued", t.prefetchIssued},
                  {"prefetch_used", t.prefetchUsed},
                  {"tokens", t.tokens},
                  {"prefill_bytes_read", t.prefill ? Json(t.prefill->bytesRead) : Json()},
                  {"prefill_tokens", t.prefill ? Json(t.prefill->tokens) : Json()}}},
                {"expert_hit_rate", r.expertHitRate()},
                {"mib_read_per_decode_token", r.mibReadPerDecodeToken()},
                {"mib_read_per_prompt_token",
                 r.mibReadPerPromptToken() >= 0 ? Json(r.mibReadPerPromptToken()) : Json()}};
}

// "temperature 0.7, top_k 40": the keys as stored, for people.
std::string samplingLine(const SamplingSettings& s) {
    const Json j = samplingJson(s);
    std::string out;
    for (const auto& [key, value] : j.items()) {
        if (!out.empty()) out += ", ";
        out += key + " " + value.dump();
    }
    return out;
}

std::string oneLine(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

// The fence that `text` leaves open ("```", "~~~~", ...), or "" (CommonMark fenced code blocks:
// a fence is 3+ backticks or tildes after at most 3 spaces; it is closed by a line of the same
// character, at least as long, and nothing else). An answer stopped in the middle of a code
// block leaves one open, which would turn the rest of the export into code.
std::string openFence(const std::string& text) {
    std::string open;
    size_t at = 0;
    while (at <= text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(at, end - at);
        size_t i = 0;
        while (i < line.size() && i < 3 && line[i] == ' ')
            ++i;
        const char c = i < line.size() ? line[i] : 0;
        if (c == '`' || c == '~') {
            size_t n = 0;
            while (i + n < line.size() && line[i + n] == c)
                ++n;
            if (n >= 3) {
                const std::string rest = line.substr(i + n);
                if (open.empty()) {
                    if (c != '`' || rest.find('`') == std::string::npos) open.assign(n, c);
                } else if (c == open[0] && n >= open.size() &&
                           rest.find_first_not_of(" \t\r") == std::string::npos) {
                    open.clear();
                }
            }
        }
        at = end + 1;
    }
    return open;
}

const char* roleHeading(Role r) {
    switch (r) {
    case Role::System:
        return "System";
    case Role::User:
        return "User";
    case Role::Assistant:
        break;
    }
    return "Assistant";
}

} // namespace

std::string exportMarkdown(const SessionInfo& session, const std::vector<MessageRecord>& messages) {
    std::string md =
        "# " + (session.title.empty() ? "Untitled session" : oneLine(session.title)) + "\n\n";
    if (!session.modelPath.empty() || !session.modelIdentity.empty()) {
        md += "- Model: " + (session.modelPath.empty() ? "(unknown folder)" : session.modelPath);
        if (!session.modelIdentity.empty())
            md += " (identity " + session.modelIdentity.substr(0, 12) + ")";
        md += "\n";
    }
    md += "- Created: " + isoTime(session.createdMs) + "\n";
    const std::string sampling = samplingLine(session.sampling);
    if (!sampling.empty()) md += "- Sampling: " + sampling + "\n";
    if (session.seed) md += "- Seed: " + std::to_string(*session.seed) + "\n";
    if (!session.systemPrompt.empty()) md += "\n## System prompt\n\n" + session.systemPrompt + "\n";
    for (const MessageRecord& m : messages) {
        md += "\n## ";
        md += roleHeading(m.role);
        md += "\n\n" + m.text;
        if (!m.text.empty() && m.text.back() != '\n') md += "\n";
        const std::string fence = openFence(m.text);
        if (!fence.empty()) md += fence + "\n";
        if (m.stopReason && *m.stopReason != StopReason::Eos)
            md += std::string("\n*(stopped: ") + stopReasonName(*m.stopReason) + ")*\n";
    }
    return md;
}

std::string exportJson(const SessionInfo& session, const std::vector<MessageRecord>& messages,
                       const std::vector<RunRecord>& runs) {
    std::map<int64_t, const RunRecord*> runById;
    for (const RunRecord& r : runs)
        runById[r.id] = &r;
    Json msgs = Json::array();
    for (const MessageRecord& m : messages) {
        Json run = nullptr;
        if (m.run) {
            auto it = runById.find(*m.run);
            if (it != runById.end()) run = runJson(*it->second);
        }
        msgs.push_back(Json{
            {"position", m.position},
            {"role", roleName(m.role)},
            {"text", m.text},
            {"created_ms", m.createdMs},
            {"stop_reason", m.stopReason ? Json(stopReasonName(*m.stopReason)) : Json(nullptr)},
            {"seed", seedJson(m.seed)},
            {"sampling", m.sampling ? samplingJson(*m.sampling) : Json(nullptr)},
            {"run", std::move(run)}});
    }
    const Json doc{{"format", "colibri-session"},
                   {"version", 2},
                   {"title", session.title},
                   {"created", isoTime(session.createdMs)},
                   {"updated", isoTime(session.updatedMs)},
                   {"created_ms", session.createdMs},
                   {"updated_ms", session.updatedMs},
                   {"model", {{"identity", session.modelIdentity}, {"path", session.modelPath}}},
                   {"system_prompt", session.systemPrompt},
                   {"sampling", samplingJson(session.sampling)},
                   {"seed", seedJson(session.seed)},
                   {"messages", std::move(msgs)}};
    // replace: invalid UTF-8 (a model can emit a broken sequence) becomes U+FFFD instead of an
    // exception.
    return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

} // namespace coli::storage
