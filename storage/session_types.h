#pragma once
// Plain values of the chat history (docs/storage.md "Sessions"): a session, its messages and the
// statistics of each answered turn (a run). What SessionStore (sessions.h) reads and writes and
// the exports (session_export.h) print. No SQLite here: these cross threads freely.
//
// Units: times are Unix milliseconds (UTC) so that two sessions touched in the same second still
// order; durations are seconds (double); byte counts are bytes; token counts are tokens.
// Thread-safety: plain values and pure functions; safe from any thread.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace coli::storage {

enum class Role { System, User, Assistant };
// "system", "user", "assistant": the stored spelling (messages.role).
const char* roleName(Role r);
// The Role of a stored spelling; nullopt for anything else.
std::optional<Role> parseRole(std::string_view s);

// Why an answer ended. A message being streamed, and every user or system message, has none.
enum class StopReason {
    Eos,         // the model ended its answer (end-of-sequence / end-of-turn token)
    MaxTokens,   // the max_new_tokens limit
    StopString,  // a stop string was produced
    Cancelled,   // the user pressed Stop
    ContextFull, // the context window had no room left
    Failed,      // generation failed (the app shows the error; the text so far is kept)
};
// "eos", "max_tokens", "stop_string", "cancelled", "context_full", "failed" (the stored spelling).
const char* stopReasonName(StopReason r);
std::optional<StopReason> parseStopReason(std::string_view s);

// Sampling settings; each value left empty takes the model's default (generation_config.json,
// else the sampler's defaults). Stored as a JSON object whose keys are the snake_case names in
// the comments; an empty value is an absent key, so "{}" means "all model defaults". Keys this
// code does not know are ignored when read (and not kept when written back). Ranges are the
// sampler's (engine/sampler/sampler.h) and are checked by the engine, not here.
struct SamplingSettings {
    std::optional<double> temperature;   // "temperature"; 0 = greedy
    std::optional<int> topK;             // "top_k"; 0 = off
    std::optional<double> topP;          // "top_p"; 1 = off
    std::optional<double> minP;          // "min_p"; 0 = off
    std::optional<double> repeatPenalty; // "repeat_penalty"; 1 = off
    std::optional<int> repeatLastN;      // "repeat_last_n" (tokens the penalty looks at)
    std::optional<int> maxNewTokens;     // "max_new_tokens" (answer length limit, tokens)

    bool operator==(const SamplingSettings&) const = default;
};

// The JSON object text of `s` (compact, keys in the order above, absent ones left out).
std::string samplingToJson(const SamplingSettings& s);
// Parses what samplingToJson wrote (unknown keys ignored). nullopt when `json` is not a JSON
// object or a known key has the wrong type (a number for the real values, an integer for top_k,
// repeat_last_n and max_new_tokens).
std::optional<SamplingSettings> samplingFromJson(std::string_view json);

// A chat session: its title, the model it was held with and its per-session settings.
struct SessionInfo {
    int64_t id = 0;               // assigned by createSession (ignored there)
    std::string title;            // may be empty (the app titles it from the first message)
    std::string modelIdentity;    // storage/model_identity.h (SHA-256 hex); empty: no model yet
    std::string modelPath;        // the model's folder when the session was held with it
    int64_t createdMs = 0;        // Unix ms; 0 at createSession means "now"
    int64_t updatedMs = 0;        // Unix ms of the last message appended or finished, or settings
                                  // change; 0 at createSession means createdMs
    std::string systemPrompt;     // empty: none
    SamplingSettings sampling;    // the session's settings over the model's defaults
    std::optional<uint64_t> seed; // a fixed seed for every answer, or none (a new seed each)
    int64_t messageCount = 0;     // filled by listSessions / session(); ignored when writing

    bool operator==(const SessionInfo&) const = default;
};

// The settings part of a session (setSessionSettings).
struct SessionSettings {
    std::string systemPrompt;
    SamplingSettings sampling;
    std::optional<uint64_t> seed;
};

// One message of a session. Positions are 0, 1, 2, ... within the session (unique); the app
// appends at the next position and, to edit and resend, deletes from a position first.
struct MessageRecord {
    int64_t id = 0;      // assigned by appendMessage (ignored there)
    int64_t session = 0; // the session's id
    int position = 0;    // >= 0, unique in the session
    Role role = Role::User;
    std::string text;      // UTF-8 as produced; <think>...</think> blocks are kept in the text
    int64_t createdMs = 0; // Unix ms; 0 at appendMessage means "now"
    std::optional<StopReason> stopReason;     // set by finishMessage for answers
    std::optional<uint64_t> seed;             // the seed the answer was sampled with
    std::optional<SamplingSettings> sampling; // the parameters the answer was sampled with
    std::optional<int64_t> run;               // the run (turn statistics) of this answer

    bool operator==(const MessageRecord&) const = default;
};

// The share of the engine thread's wall time during a turn, in seconds (they add up to the turn).
struct TimeSplit {
    double attentionS = 0;  // attention (and the dense parts of the layers)
    double expertFfnS = 0;  // routed experts' FFN compute
    double expertWaitS = 0; // waiting for expert reads
    double samplingS = 0;   // the sampler
    double otherS = 0;      // everything else

    bool operator==(const TimeSplit&) const = default;
};

// Expert tier counters over one turn: differences of engine/tiers/tier_telemetry.h TierCounters
// between the turn's start and end (same meanings).
struct RunTierCounters {
    uint64_t routed = 0;         // routed (layer, expert) accesses
    uint64_t hitsPinned = 0;     // found in the pinned hot-store
    uint64_t hitsCache = 0;      // found in the cache, ready or still loading (inFlightHits)
    uint64_t inFlightHits = 0;   // of hitsCache: still being read by a prefetch
    uint64_t misses = 0;         // read from disk on demand
    uint64_t bytesRead = 0;      // bytes of expert reads completed
    uint64_t evictions = 0;      // ready experts dropped to make room
    uint64_t prefetchIssued = 0; // lookahead reads started
    uint64_t prefetchUsed = 0;   // prefetched experts later used
    uint64_t tokens = 0;         // tokens the tiers counted (prefilled + generated)
    // The prompt's part of bytesRead and tokens (the turn's prefill steps); unknown (nullopt) in
    // runs saved before schema version 5. Both set or both unknown.
    struct Prefill {
        uint64_t bytesRead = 0;
        uint64_t tokens = 0;
        bool operator==(const Prefill&) const = default;
    };
    std::optional<Prefill> prefill;
    // Found in VRAM and computed on the GPU (docs/gpu.md): routed = hitsPinned + hitsCache +
    // misses + hitsVram. Schema version 6; older runs' are recovered from that sum at migration.
    uint64_t hitsVram = 0;

    bool operator==(const RunTierCounters&) const = default;
};

// One answered turn's statistics (one row of `runs`).
struct RunRecord {
    int64_t id = 0;              // assigned by addRun (ignored there)
    int64_t session = 0;         // the session's id
    int64_t createdMs = 0;       // Unix ms; 0 at addRun means "now"
    int64_t promptTokens = 0;    // tokens of the prompt for this turn (the whole context fed)
    int64_t reusedTokens = 0;    // of promptTokens: found in the KV cache, not prefilled again
    int64_t generatedTokens = 0; // tokens of the answer
    double tokensPerSecond = 0;  // decode speed: generated tokens / decodeSeconds
    double ttftSeconds = 0;      // time to the first answer token
    double prefillSeconds = 0;
    double decodeSeconds = 0;
    TimeSplit split;
    RunTierCounters tiers;

    // Derived, as `coli generate` prints them (runtime/expert_budget.h summariseTiers), not stored:
    // routed experts found ready in VRAM or RAM (tiers::hitRate): (hitsVram + hitsPinned +
    // hitsCache - inFlightHits) / routed; 0 when nothing was routed (a dense model).
    double expertHitRate() const;
    // MiB (2^20 bytes) of experts read per decode step: (bytesRead - prefill.bytesRead) / 2^20 /
    // (tokens - prefill.tokens); for a run without the prompt part (saved before schema 5) the
    // whole turn's bytesRead / 2^20 / tokens; 0 when no token was counted.
    double mibReadPerDecodeToken() const;
    // MiB read per prompt token: prefill.bytesRead / 2^20 / prefill.tokens; -1 when unknown or no
    // prompt token went through the model (the whole prompt reused).
    double mibReadPerPromptToken() const;

    bool operator==(const RunRecord&) const = default;
};

// A session found by searchSessions.
struct SearchHit {
    int64_t session = 0;
    // A short excerpt of the best matching title or message with each match between
    // kMatchOpen and kMatchClose ("…" where text was cut). Plain text otherwise (not escaped).
    std::string snippet;
    double rank = 0; // FTS5 bm25 of the best match; lower is better (hits come sorted by it)
};
inline constexpr std::string_view kMatchOpen = "\x02";  // STX: never in typed text
inline constexpr std::string_view kMatchClose = "\x03"; // ETX

} // namespace coli::storage
