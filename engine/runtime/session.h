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
#include "sampler/sampler.h"
#include "tokenizer/tokenizer.h"

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coli {

// generation_config.json: eos_token_id (int or list), bos_token_id, and sampling defaults.
struct GenerationConfig {
    std::vector<int32_t> eosIds;
    int32_t bosId = -1;
    bool hasSamplingDefaults = false;
    SamplerParams defaults;
};

class LoadedModel {
public:
    // Loads config, weights, tokenizer.json, tokenizer_config.json (chat template, optional: its
    // absence is reported only when renderChat is called) and generation_config.json (optional).
    // Errors: as Model::load and Tokenizer::fromFile, each naming the file.
    static Result<std::unique_ptr<LoadedModel>> load(const std::string& dir,
                                                     const ModelLoadOptions& opt,
                                                     const ProgressFn& progress = {},
                                                     const std::atomic<bool>* cancel = nullptr);
    const std::string& dir() const;
    Model& model() const;
    const Tokenizer& tokenizer() const;
    const ChatTemplate* chatTemplate() const; // nullptr when tokenizer_config.json has none
    const GenerationConfig& generationConfig() const;
    // Errors: NotFound (no chat template; names the file), template errors.
    Result<std::string> renderChat(const std::vector<ChatMessage>& messages,
                                   bool addGenerationPrompt) const;
    ~LoadedModel();

private:
    LoadedModel();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

enum class StopReason { Eos, StopString, MaxTokens, Cancelled, ContextFull, Error };
const char* stopReasonName(StopReason r);

struct GenerateParams {
    int maxNewTokens = 256;               // >= 1
    SamplerParams sampler;
    std::vector<std::string> stopStrings; // generation ends before emitting any of them
    bool ignoreEos = false;
};

struct GenerateStats {
    int promptTokens = 0;
    int reusedTokens = 0;       // prompt tokens served from the KV cache (exact id prefix)
    int generatedTokens = 0;
    double ttftSeconds = 0;     // request start -> first piece emitted (or first token sampled)
    double prefillSeconds = 0;
    double decodeSeconds = 0;
    double prefillTokensPerSecond = 0;
    double decodeTokensPerSecond = 0;
    StopReason stopReason = StopReason::MaxTokens;
};

// Called with each piece of text as soon as it is complete UTF-8 and cannot be part of a stop
// string. Called on the thread that runs generate(), never from an OpenMP region.
using PieceFn = std::function<void(std::string_view piece)>;

class Session {
public:
    explicit Session(const LoadedModel& model);
    // Runs prompt (the full conversation's ids; a prefix matching the cached tokens is reused) then
    // samples until EOS, a stop string, maxNewTokens, the context limit, or *cancel.
    // Cancelled is not an error: it returns stats with stopReason Cancelled.
    // Errors: InvalidArgument (params, empty prompt, prompt longer than context), Numeric (NaN/Inf
    // logits), forward errors.
    Result<GenerateStats> generate(std::span<const int32_t> prompt, const GenerateParams& params,
                                   const PieceFn& onPiece,
                                   const std::atomic<bool>* cancel = nullptr);
    void reset(); // forget the conversation (clears the KV cache)
    // Tokens in the KV cache (prompt + generated so far).
    const std::vector<int32_t>& tokens() const { return m_tokens; }

private:
    const LoadedModel& m_model;
    KVCache m_kv;
    std::vector<int32_t> m_tokens;
};

} // namespace coli
