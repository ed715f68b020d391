#pragma once
// Tokenizer read from a Hugging Face `tokenizer.json` (the `tokenizers` library's format).
// Two model kinds, as the supported families ship them:
//   - byte-level BPE (GPT-2 style: Qwen, OLMoE, Granite): pre-tokenizer regex split run by PCRE2
//     in UTF + Unicode-property mode, ByteLevel byte->unicode mapping, BPE merges by rank.
//   - SentencePiece-style BPE (Llama/Mistral/Mixtral): Metaspace pre-tokenizer or
//     Prepend("▁")+Replace(" ","▁") normalizer, BPE with byte_fallback (<0x..> tokens), decoder
//     chain (Replace, ByteFallback, Fuse, Strip).
// Added tokens (special or not) are matched before BPE, honouring lstrip/rstrip/normalized/
// single_word. Invalid UTF-8 in input text is replaced by U+FFFD before anything else; never a
// crash. Thread-safety: immutable after load (the BPE piece cache is internally locked);
// encode/decode are const and safe from several threads. Supported subset and how it is tested
// against Hugging Face: docs/tokenizer.md.
#include "core/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coli {

class Tokenizer {
public:
    // Errors: NotFound, Io, Malformed (naming the file and the JSON path), Unsupported (a model
    // type, normalizer, pre-tokenizer or decoder outside the supported subset, named).
    static Result<std::unique_ptr<Tokenizer>> fromFile(const std::string& tokenizerJsonPath);
    static Result<std::unique_ptr<Tokenizer>> fromJson(const std::string& json,
                                                       const std::string& sourceName);
    ~Tokenizer();

    // Text -> ids. addSpecial applies the post-processor (e.g. BOS for Llama-style tokenizers),
    // as HF's encode(text, add_special_tokens=True) does. Special tokens written in the text are
    // always recognised (as HF does for added tokens).
    std::vector<int32_t> encode(std::string_view text, bool addSpecial = false) const;
    // Ids -> text, as HF's decode(ids, skip_special_tokens) does.
    std::string decode(std::span<const int32_t> ids, bool skipSpecial = false) const;

    // One past the largest id (vocabulary and added tokens). Ids in range without a string
    // decode to nothing, like ids out of range.
    int vocabSize() const;
    std::optional<int32_t> tokenId(std::string_view token) const; // exact token string lookup
    std::string tokenString(int32_t id) const; // raw vocab string ("" if out of range)
    bool isSpecial(int32_t id) const;          // added token with special=true

private:
    Tokenizer();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    friend class StreamDecoder;
};

// Incremental detokenisation for streaming: push ids one at a time, get text that is safe to show.
// Never emits a partial UTF-8 sequence; the concatenation of all push() results plus flush()
// equals tokenizer.decode(all ids). Thread-safety: one instance per stream.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok, bool skipSpecial = false);
    std::string push(int32_t id);
    std::string flush(); // whatever remains (incomplete UTF-8 becomes U+FFFD, as decode() does)
    void reset();

    ~StreamDecoder();
    StreamDecoder(StreamDecoder&&) noexcept;

private:
    struct State; // decoder position + raw bytes not yet settled into whole characters
    const Tokenizer& m_tok;
    bool m_skipSpecial;
    std::unique_ptr<State> m_state;
};

// Replaces every invalid UTF-8 sequence in s by U+FFFD (one per maximal invalid subpart, as the
// Unicode standard's "best practice" and WHATWG's decoder do).
std::string sanitizeUtf8(std::string_view s);

} // namespace coli
