#pragma once
// The generation API: what the CLI and the app call. Plain C++, no Qt.
//
//   auto lm = LoadedModel::load(dir, opts, progress, &cancel);   // Result<unique_ptr<LoadedModel>>
//   Session s(*lm.value());
//   auto prompt = lm->renderChat({{"user", "Hi"}}, true);          // Result<std::string>
//   auto ids = lm->tokenizer().encode(prompt.value());
//   auto stats = s.generate(ids, params, [](std::string_view piece){ ... }, &cancel);
//
// Thread-safety: a LoadedModel is immutable after load and may be shared; a Session is used by
// one thread at a time (the engine's inference thread). `cancel` may be set from any thread.
// Nothing here calls exit(), abort(), or throws on bad input.
#include "chat/chat_template.h"
#include "core/status.h"
#include "forward/model.h"
#include "runtime/generation_config.h"
#include "sampler/sampler.h"
#include "tiers/tier_telemetry.h"
#include "tokenizer/tokenizer.h"

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coli {

class LoadedModel {
public:
    // Loads config.json + weights (Model::load), tokenizer.json, tokenizer_config.json (chat
    // template, optional: a template we cannot load is a warning (warnings()) and renderChat's
    // error, not a load error) and generation_config.json (optional). Every file must be a
    // regular file (a named pipe in its place is refused, never waited on; core/file_text.h).
    // progress: stages "config" (0), the model's weight stages (scaled into [0.02, 0.92]),
    // "tokenizer" (0.92), "chat template" (0.96), "ready" (1.0); called on the calling thread.
    // Errors: as Model::load and Tokenizer::fromFile, each naming the file; Malformed for a bad
    // generation_config.json; Cancelled when *cancel turns true.
    static Result<std::unique_ptr<LoadedModel>> load(const std::string& dir,
                                                     const ModelLoadOptions& opt,
                                                     const ProgressFn& progress = {},
                                                     const std::atomic<bool>* cancel = nullptr);
    const std::string& dir() const;
    Model& model() const;
    const Tokenizer& tokenizer() const;
    // The same tokenizer, for another thread to keep after this model is gone (e.g. the GUI
    // counting a message's tokens before it is sent). Tokenizer's const functions are safe from
    // several threads (tokenizer.h), so the copy-free share is safe too.
    std::shared_ptr<const Tokenizer> sharedTokenizer() const;
    const ChatTemplate* chatTemplate() const; // nullptr when none could be loaded
    const GenerationConfig& generationConfig() const;
    // Problems that did not stop the load, one message each naming the file and key: a
    // tokenizer_config.json that is empty or whose chat template cannot be loaded (not its
    // absence, nor a config without a template), generation_config.json sampling keys that were
    // ignored, and the model's own (Model::warnings: a mirror or mirror file not used). Show them
    // to the user.
    const std::vector<std::string>& warnings() const;
    // Renders a conversation with the model's chat template (text, to be encoded with
    // addSpecial = false, as transformers' apply_chat_template does), within the default render
    // budget (chat/render_budget.h). cancel (may be null, may be set from any thread) stops the
    // render within microseconds.
    // Errors: NotFound (no tokenizer_config.json or no chat_template; names the file), the
    // template's load error, or its render errors (ChatTemplate::render: InvalidArgument when
    // the template exceeds its memory or operation budget); Cancelled when *cancel turns true.
    Result<std::string> renderChat(const std::vector<ChatMessage>& messages,
                                   bool addGenerationPrompt,
                                   const std::atomic<bool>* cancel = nullptr) const;
    ~LoadedModel();

private:
    LoadedModel();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

enum class StopReason { Eos, StopString, MaxTokens, Cancelled, ContextFull, Error };
// "eos", "stop string", "max tokens", "cancelled", "context full", "error".
const char* stopReasonName(StopReason r);

struct GenerateParams {
    int maxNewTokens = 256; // >= 1; counts every sampled token, a final EOS included
    SamplerParams sampler;
    std::vector<std::string> stopStrings; // non-empty, valid UTF-8; never emitted
    bool ignoreEos = false;               // keep sampling past EOS ids (their text is not emitted)
    // Called once on generate()'s thread when the prompt's forward passes have run, before the
    // first token is sampled (not when generate() fails or is cancelled during the prompt): the
    // expert cache's token observer (tiers/expert_cache.h) saw every prefill step before it and
    // sees only decode steps after it. May be empty.
    std::function<void()> onPrefillDone;
};

// Where the engine thread's wall time went during one generate() call, in seconds: a partition
// (the five parts add up to the call's wall time; `other` is what the rest leaves, never
// negative). Measured by the engine with steady_clock around coarse regions (ForwardTimes), on the
// calling thread only.
//   attention:  the attention blocks of every layer (forward/model.h ForwardTimes::attention);
//   expertFfn:  the MoE blocks (router, routed and shared experts) minus expertWait;
//   expertWait: blocked waiting for streamed expert reads (the turn's
//               TierCounters::ioWaitSeconds; 0 with resident experts);
//   sampling:   the sampler (logits -> next id);
//   other:      embeddings, norms, residual adds, dense FFN layers, the output projection,
//               detokenising, stop strings, the onPiece callback, validation.
struct TimeSplit {
    double attention = 0;
    double expertFfn = 0;
    double expertWait = 0;
    double sampling = 0;
    double other = 0;
    double total() const { return attention + expertFfn + expertWait + sampling + other; }
    // part / total(); 0 when total() is 0.
    double share(double part) const {
        const double t = total();
        return t > 0 ? part / t : 0.0;
    }
};

struct GenerateStats {
    int promptTokens = 0;
    int reusedTokens = 0;      // prompt tokens served from the KV cache (exact id prefix)
    int generatedTokens = 0;   // tokens sampled, including a final EOS; == generatedIds.size()
    double ttftSeconds = 0;    // generate() call -> first token sampled
    double prefillSeconds = 0; // forward passes over the prompt's non-reused tokens
    double decodeSeconds = 0;  // first token sampled -> last token sampled
    double prefillTokensPerSecond = 0; // (promptTokens - reusedTokens) / prefillSeconds
    double decodeTokensPerSecond = 0;  // (generatedTokens - 1) / decodeSeconds
    StopReason stopReason = StopReason::MaxTokens;
    std::vector<int32_t> generatedIds; // every sampled id in order (a final EOS included)
    TimeSplit time;                    // the call's wall time, split (sums to wallSeconds)
    double wallSeconds = 0;            // generate() call -> return
    // The turn's expert tier counters (ExpertCache counters after - before the call), for the
    // turn's hit rate (tiers::hitRate) and bytes read per token (tiers::bytesReadPerToken). All
    // zero when the experts are resident (no ExpertCache). `tokens` counts the tokens run through
    // the model: the prompt's non-reused ones and every sampled token but the last (which is not
    // run, see Session).
    tiers::TierCounters tiers;
    // The same split at the end of the prefill (the counters when the last prompt chunk's
    // forward returned): tiersPrefill covers the prompt's forward passes, tiersDecode the rest
    // (tiersPrefill + tiersDecode == tiers, field by field). A prompt read per token and a decode
    // step's read per token differ by the batch: a prefill chunk reads each routed expert once
    // for all its tokens, so mixing them understates what a decode step reads.
    tiers::TierCounters tiersPrefill;
    tiers::TierCounters tiersDecode;
};

// Called with each piece of text as soon as it is complete UTF-8 and cannot be part of a stop
// string. Called on the thread that runs generate(), never from an OpenMP region.
using PieceFn = std::function<void(std::string_view piece)>;

// One conversation's state: the tokens whose keys/values are in the KV cache.
// Invariant: tokens() are exactly the tokens in the KV cache, in order. The last sampled token of
// a generation is not run through the model (nothing needs its logits yet), so it is not cached:
// the next turn's prompt, which starts with it, re-runs it.
class Session {
public:
    explicit Session(const LoadedModel& model);
    // Runs prompt (the full conversation's ids) then samples until EOS, a stop string,
    // maxNewTokens, the context limit, or *cancel, calling onPiece with the text.
    // Prefix reuse: the longest common prefix of prompt and tokens() is kept in the KV cache
    // (at most prompt.size() - 1 tokens, since the last prompt token must run to give logits);
    // the rest is prefilled in chunks (cancel is checked between chunks and between tokens).
    // EOS ids (generation config) end generation unless ignoreEos; their text is never emitted.
    // Output is the same, token for token, whatever was reused.
    // Cancelled is not an error: it returns stats with stopReason Cancelled; so are ContextFull
    // (the context filled up while decoding), Eos, StopString and MaxTokens.
    // Errors: InvalidArgument (params, empty prompt, prompt longer than the context), Numeric
    // (NaN/Inf logits), forward errors. After an error the session stays usable.
    Result<GenerateStats> generate(std::span<const int32_t> prompt, const GenerateParams& params,
                                   const PieceFn& onPiece,
                                   const std::atomic<bool>* cancel = nullptr);
    void reset(); // forget the conversation (clears the KV cache)
    // Tokens in the KV cache (see the invariant above).
    const std::vector<int32_t>& tokens() const { return m_tokens; }
    // The KV cache itself, for persisting it (runtime/session_kv_file.h).
    const KVCache& kv() const { return m_kv; }
    // Continues a conversation persisted earlier: tokens and their KV rows (KVCache::assign's
    // layout, [tokens.size(), positionFloats]) become the session's state, as if this session had
    // run them. The rows must come from this model with the same weights (the file's key says so).
    // Errors: InvalidArgument (a token outside the vocabulary, rows of the wrong size, more tokens
    // than the context); the session is then reset.
    Status restore(std::span<const int32_t> tokens, std::span<const float> rows);

private:
    const LoadedModel& m_model;
    KVCache m_kv;
    std::vector<int32_t> m_tokens;
};

// Checks GenerateParams (sampler ranges via validate(), maxNewTokens, stop strings).
// Errors: InvalidArgument naming the parameter.
Status validate(const GenerateParams& p);

} // namespace coli
