#pragma once
// tokenizer.json "decoder": turns token strings back into text. Supported: null (tokens joined
// by spaces, as Hugging Face does), ByteLevel, Replace (String pattern), ByteFallback, Fuse,
// Strip, Metaspace, and Sequence of these (semantics of Hugging Face's decoders/*.rs). Others ->
// Unsupported naming the type.
//
// The decoder works as a stream of raw bytes: each token appends the bytes it contributes, and the
// caller turns the bytes into text with sanitizeUtf8 (WHATWG replacement of invalid sequences, as
// Hugging Face's JS ByteFallback/ByteLevel decoders and Rust's from_utf8_lossy do). Steps before
// Fuse act on each token; after Fuse only Strip (start only) is supported, applied once to the
// start of the stream. That makes decoding incremental, which StreamDecoder relies on: the bytes of
// a prefix of the ids are a prefix of the bytes of all ids.
// Difference kept on purpose: Rust's ByteFallback decoder turns an invalid run of <0xNN> bytes
// into one U+FFFD per byte, while we (and HF's JS port) apply the maximal-subpart rule.
// Internal header. Thread-safety: immutable after fromJson(); each stream owns its State.
#include "tokenizer/json_util.h"

#include <string>
#include <string_view>
#include <vector>

namespace coli {

class Decoder {
public:
    static Result<Decoder> fromJson(const tokjson::Json& j, const tokjson::Ctx& ctx);

    // Per-stream state (the position in the stream matters for Metaspace and Strip).
    struct State {
        size_t tokenIndex = 0;
        size_t stripped = 0;
        bool stripDone = false;
        std::string held; // bytes that may still turn out to be a strippable prefix
    };

    // Appends the raw bytes `token` contributes. isAdded: an added token, which the ByteLevel
    // step keeps verbatim (as Hugging Face's JS ByteLevel decoder does).
    void push(std::string_view token, bool isAdded, State& st, std::string& raw) const;
    // Appends whatever the state still holds (end of stream).
    void finish(State& st, std::string& raw) const;

private:
    enum class Kind { ByteLevel, Replace, ByteFallback, Strip, Metaspace };
    struct Step {
        Kind kind;
        std::string a, b; // Replace: from, to; Strip: content; Metaspace: replacement
        size_t start = 0, stop = 0;
        bool dropFirst = false; // Metaspace: drop the replacement in the first token
    };
    static Status parse(const tokjson::Json& j, const tokjson::Ctx& ctx, Decoder& d);
    void feedStream(std::string_view bytes, State& st, std::string& raw) const;

    std::vector<Step> m_perToken;
    bool m_fused = false;
    bool m_joinWithSpace = false;
    std::string m_streamStripContent; // Strip after Fuse
    size_t m_streamStripStart = 0;
};

} // namespace coli
