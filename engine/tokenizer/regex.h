#pragma once
// A pre-tokenizer regex (written for Oniguruma, which Hugging Face's Rust tokenizers compile
// them with) run by PCRE2 in UTF + Unicode-property mode, JIT-compiled when PCRE2 has a JIT.
// Before compiling, two Oniguruma/PCRE2 differences are bridged:
//   - \s and \S become \p{White_Space} / \P{White_Space} (PCRE2's UCP \s also matches U+180E);
//   - (?i: ... ) groups fold ASCII letters only ([sS]), as Hugging Face's JS port does; PCRE2's
//     caseless mode would also fold e.g. U+017F LONG S into "s".
// Internal header. Thread-safety: immutable after compile(); findAll() may run concurrently.
#include "core/status.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coli {

class Regex {
public:
    // Errors: Malformed (naming `what`, e.g. "tokenizer.json: pre_tokenizer.pattern.Regex") when
    // PCRE2 cannot compile the pattern.
    static Result<Regex> compile(std::string_view onigPattern, const std::string& what);

    // Byte ranges [begin, end) of the successive, non-overlapping, non-empty matches in text,
    // appended to out. Precondition: text is valid UTF-8.
    void findAll(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

private:
    struct Code;
    std::shared_ptr<const Code> m_code;
};

// Translates an Oniguruma pattern into the PCRE2 pattern described above (exposed for tests).
std::string translateOnigurumaPattern(std::string_view pattern);

} // namespace coli
