#include "runtime/session.h"

#include "runtime/stop_matcher.h"
#include "tiers/expert_cache.h"

#include <algorithm>
#include <chrono>
#include <optional>

namespace coli {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double>(t1 - t0).count();
}

bool cancelled(const std::atomic<bool>* cancel) {
    // relaxed: the flag carries no data; a later read is fine, it only needs to arrive.
    return cancel && cancel->load(std::memory_order_relaxed);
}

// Prompt tokens per forward call while prefilling: large enough for the batched path to pay off,
// small enough that cancel is seen within a fraction of a second.
constexpr size_t kPrefillChunk = 256;

} // namespace

const char* stopReasonName(StopReason r) {
    switch (r) {
    case StopReason::Eos:
        return "eos";
    case StopReason::StopString:
        return "stop string";
    case StopReason::MaxTokens:
        return "max tokens";
    case StopReason::Cancelled:
        return "cancelled";
    case StopReason::ContextFull:
        return "context full";
    case StopReason::Error:
        return "error";
    }
    return "unknown";
}

Status validate(const GenerateParams& p) {
    if (p.maxNewTokens < 1)
        return {ErrorCode::InvalidArgument,
                "maxNewTokens must be >= 1 (got " + std::to_string(p.maxNewTokens) + ")"};
    COLI_RETURN_IF_ERROR(validate(p.sampler));
    for (const auto& s : p.stopStrings) {
        if (s.empty()) return {ErrorCode::InvalidArgument, "stop strings must not be empty"};
        if (sanitizeUtf8(s) != s)
            return {ErrorCode::InvalidArgument, "stop string is not valid UTF-8"};
    }
    return {};
}

Session::Session(const LoadedModel& model) : m_model(model) {}

void Session::reset() {
    m_kv.clear();
    m_tokens.clear();
}

Status Session::restore(std::span<const int32_t> tokens, std::span<const float> rows) {
    reset();
    const ModelConfig& c = m_model.model().config();
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= c.vocabSize)
            return {ErrorCode::InvalidArgument, "restored token " + std::to_string(i) + " has id " +
                                                    std::to_string(tokens[i]) +
                                                    ", outside the vocabulary"};
    Status s = m_kv.assign(c.nLayers, kvShape(c), c.maxPositions, rows, int(tokens.size()));
    if (!s) {
        reset();
        return s;
    }
    m_tokens.assign(tokens.begin(), tokens.end());
    return {};
}

Result<GenerateStats> Session::generate(std::span<const int32_t> prompt,
                                        const GenerateParams& params, const PieceFn& onPiece,
                                        const std::atomic<bool>* cancel) {
    const auto tStart = Clock::now();
    const Model& model = m_model.model();
    tiers::ExpertCache* cache = model.expertCache();
    const tiers::TierCounters tiersBefore = cache ? cache->counters() : tiers::TierCounters{};
    COLI_RETURN_IF_ERROR(validate(params));
    const int context = model.config().maxPositions;
    const int vocab = model.config().vocabSize;
    if (prompt.empty()) return Status(ErrorCode::InvalidArgument, "empty prompt");
    if (static_cast<int64_t>(prompt.size()) > context)
        return Status(ErrorCode::InvalidArgument,
                      "prompt has " + std::to_string(prompt.size()) +
                          " tokens, more than the model's context length (" +
                          std::to_string(context) + ")");
    for (size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || prompt[i] >= vocab)
            return Status(ErrorCode::InvalidArgument, "prompt token " + std::to_string(i) +
                                                          " has id " + std::to_string(prompt[i]) +
                                                          ", outside the vocabulary [0, " +
                                                          std::to_string(vocab) + ")");

    GenerateStats stats;
    stats.promptTokens = static_cast<int>(prompt.size());

    // The time split (TimeSplit): forward() adds its regions, the sampler is timed here, and
    // `other` is the rest of the wall time.
    ForwardTimes forwardTimes;
    double samplingSeconds = 0;
    std::optional<tiers::TierCounters> tiersAfterPrefill; // set once the prompt has run
    auto finish = [&] {
        stats.wallSeconds = secondsSince(tStart, Clock::now());
        if (cache) {
            const tiers::TierCounters now = cache->counters();
            stats.tiers = now - tiersBefore;
            stats.tiersPrefill = tiersAfterPrefill.value_or(now) - tiersBefore;
            stats.tiersDecode = now - tiersAfterPrefill.value_or(now);
        }
        TimeSplit& t = stats.time;
        t.attention = forwardTimes.attention;
        // The reads are waited for inside the MoE regions (ExpertCache::next).
        t.expertWait = std::clamp(stats.tiers.ioWaitSeconds, 0.0, forwardTimes.moe);
        t.expertFfn = forwardTimes.moe - t.expertWait;
        t.sampling = samplingSeconds;
        t.other = std::max(0.0, stats.wallSeconds - t.attention - forwardTimes.moe - t.sampling);
    };

    // Prefix reuse: keep the exact common id prefix, but re-run at least the last prompt token.
    if (static_cast<int>(m_tokens.size()) != m_kv.size()) reset(); // never trust a broken cache
    size_t common = 0;
    const size_t maxCommon = std::min(m_tokens.size(), prompt.size() - 1);
    while (common < maxCommon && m_tokens[common] == prompt[common])
        ++common;
    m_kv.truncate(static_cast<int>(common));
    m_tokens.resize(common);
    stats.reusedTokens = static_cast<int>(common);

    // Any failure below leaves m_tokens == the tokens whose forward succeeded; a failed forward
    // may have written part of a chunk, so the cache is cut back to m_tokens.
    auto forward = [&](std::span<const int32_t> ids, std::vector<float>& logits) -> Status {
        Status s = model.forward(ids, m_kv, logits, false, nullptr, &forwardTimes);
        if (!s) {
            m_kv.truncate(static_cast<int>(m_tokens.size()));
            return s;
        }
        m_tokens.insert(m_tokens.end(), ids.begin(), ids.end());
        return s;
    };

    std::vector<float> logits;
    const auto tPrefill = Clock::now();
    for (size_t pos = common; pos < prompt.size(); pos += kPrefillChunk) {
        if (cancelled(cancel)) {
            stats.stopReason = StopReason::Cancelled;
            stats.prefillSeconds = secondsSince(tPrefill, Clock::now());
            finish();
            return stats;
        }
        const size_t n = std::min(kPrefillChunk, prompt.size() - pos);
        COLI_RETURN_IF_ERROR(forward(prompt.subspan(pos, n), logits));
    }
    stats.prefillSeconds = secondsSince(tPrefill, Clock::now());
    if (cache) tiersAfterPrefill = cache->counters();
    if (params.onPrefillDone) params.onPrefillDone();
    const int prefilled = stats.promptTokens - stats.reusedTokens;
    if (stats.prefillSeconds > 0) stats.prefillTokensPerSecond = prefilled / stats.prefillSeconds;

    Sampler sampler(params.sampler);
    // Control tokens (<|im_start|>, <|endoftext|>, ...) are markup, not answer text: the shown
    // text is decode(ids, skip_special_tokens=True), as transformers' chat pipelines show it.
    StreamDecoder decoder(m_model.tokenizer(), /*skipSpecial=*/true);
    StopMatcher stops(params.stopStrings);
    const auto& eosIds = m_model.generationConfig().eosIds;
    auto isEos = [&](int32_t id) {
        return std::find(eosIds.begin(), eosIds.end(), id) != eosIds.end();
    };
    auto emit = [&](const StopMatcher::Output& o) {
        if (!o.text.empty() && onPiece) onPiece(o.text);
        return o.stopped;
    };

    // History for the repetition penalty: the whole sequence so far (prompt + generated).
    std::vector<int32_t> history(prompt.begin(), prompt.end());
    Clock::time_point tFirst;
    bool stopped = false;
    while (!stopped) {
        const auto tSample = Clock::now();
        auto next = sampler.sample(logits, history);
        samplingSeconds += secondsSince(tSample, Clock::now());
        if (!next) return next.status();
        const int32_t id = next.value();
        if (stats.generatedIds.empty()) {
            tFirst = Clock::now();
            stats.ttftSeconds = secondsSince(tStart, tFirst);
        }
        stats.generatedIds.push_back(id);
        history.push_back(id);

        if (isEos(id)) {
            if (!params.ignoreEos) {
                stats.stopReason = StopReason::Eos;
                break;
            }
        } else if (emit(stops.push(decoder.push(id)))) {
            stats.stopReason = StopReason::StopString;
            stopped = true;
            break;
        }
        if (static_cast<int>(stats.generatedIds.size()) >= params.maxNewTokens) {
            stats.stopReason = StopReason::MaxTokens;
            break;
        }
        if (cancelled(cancel)) {
            stats.stopReason = StopReason::Cancelled;
            break;
        }
        if (m_kv.size() >= context) {
            stats.stopReason = StopReason::ContextFull;
            break;
        }
        const int32_t one[1] = {id};
        COLI_RETURN_IF_ERROR(forward(one, logits));
    }
    if (!stopped) {
        // The decoder may hold an incomplete UTF-8 tail; the stop matcher a possible stop prefix.
        StopMatcher::Output o = stops.push(decoder.flush());
        if (o.stopped)
            stats.stopReason = StopReason::StopString;
        else {
            StopMatcher::Output rest = stops.finish();
            o.text += rest.text;
        }
        emit(o);
    }

    stats.generatedTokens = static_cast<int>(stats.generatedIds.size());
    stats.decodeSeconds = secondsSince(tFirst, Clock::now());
    if (stats.generatedTokens > 1 && stats.decodeSeconds > 0)
        stats.decodeTokensPerSecond = (stats.generatedTokens - 1) / stats.decodeSeconds;
    finish();
    return stats;
}

} // namespace coli
