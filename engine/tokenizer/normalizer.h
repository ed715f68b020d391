#pragma once
// tokenizer.json "normalizer": applied to each piece of text between added tokens, before the
// pre-tokenizer. Supported: null, NFC, NFD, NFKC, NFKD (utf8proc), Prepend, Replace (String or
// Regex pattern), Strip, and Sequence of these. Others -> Unsupported naming the type.
// Internal header. Thread-safety: immutable after fromJson(); apply() may run concurrently.
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coli {

class Normalizer {
public:
    static Result<Normalizer> fromJson(const tokjson::Json& j, const tokjson::Ctx& ctx);

    bool isIdentity() const { return m_ops.empty(); }
    // Precondition: s is valid UTF-8; the result is valid UTF-8.
    std::string apply(std::string_view s) const;

private:
    enum class Kind { Nfc, Nfd, Nfkc, Nfkd, Prepend, ReplaceString, ReplaceRegex, Strip };
    struct Op {
        Kind kind;
        std::string a, b; // Prepend: a = prefix; Replace: a = pattern, b = content
        std::optional<Regex> regex;
        bool left = false, right = false; // Strip
    };
    static Status parse(const tokjson::Json& j, const tokjson::Ctx& ctx, std::vector<Op>& ops);
    std::vector<Op> m_ops;
};

} // namespace coli
