#pragma once
// tokenizer.json "pre_tokenizer": cuts normalized text into pieces that BPE handles one by one.
// Supported: null, Split (String or Regex pattern; behaviors Removed, Isolated,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space,
// use_regex with GPT-2's pattern), Metaspace (replacement, prepend_scheme always/first/never or
// the older add_prefix_space, split), and Sequence of these; semantics of Hugging Face's
// pre_tokenizers/*.rs and NormalizedString::split. Others -> Unsupported naming the type.
// Internal header. Thread-safety: immutable after fromJson(); split() may run concurrently.
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coli {

class PreTokenizer {
public:
    static Result<PreTokenizer> fromJson(const tokjson::Json& j, const tokjson::Ctx& ctx);

    // Appends the pieces of `section` (valid UTF-8) to out, spelled in the model's alphabet
    // (byte-level characters after a ByteLevel step). atTextStart: the section begins at offset 0
    // of the caller's text (Metaspace's prepend_scheme "first" prepends only there).
    void split(std::string_view section, bool atTextStart, std::vector<std::string>& out) const;

private:
    enum class Kind { Split, ByteLevel, Metaspace };
    enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
    enum class Prepend { Always, First, Never };
    struct Step {
        Kind kind;
        std::optional<Regex> regex; // Split (Regex pattern) or ByteLevel with use_regex
        std::string literal;        // Split (String pattern); Metaspace replacement
        Behavior behavior = Behavior::Isolated;
        bool invert = false;
        bool addPrefixSpace = false; // ByteLevel
        Prepend prepend = Prepend::Always;
        bool metaspaceSplit = true;
    };
    struct Piece {
        std::string text;
        bool atTextStart;
    };
    static Status parse(const tokjson::Json& j, const tokjson::Ctx& ctx, std::vector<Step>& steps);
    void runStep(const Step& step, std::vector<Piece>& pieces) const;

    std::vector<Step> m_steps;
};

} // namespace coli
