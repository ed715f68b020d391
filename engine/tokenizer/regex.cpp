#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace coli {

struct Regex::Code {
    pcre2_code* code = nullptr;
    ~Code() { pcre2_code_free(code); }
};

namespace {

bool isAsciiLetter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
char otherCase(char c) {
    return c >= 'a' && c <= 'z' ? char(c - 32) : char(c + 32);
}

} // namespace

std::string translateOnigurumaPattern(std::string_view p) {
    std::string out;
    out.reserve(p.size() + 32);
    bool inClass = false;
    int depth = 0;               // open groups
    std::vector<int> foldDepths; // depths at which an ASCII-folding (?i: group was opened
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        const bool fold = !foldDepths.empty();
        if (c == '\\' && i + 1 < p.size()) {
            const char e = p[i + 1];
            if (e == 's') {
                out += "\\p{White_Space}";
            } else if (e == 'S') {
                out += "\\P{White_Space}";
            } else {
                out += c;
                out += e;
            }
            ++i;
            continue;
        }
        if (inClass) {
            if (c == ']') {
                inClass = false;
                out += c;
            } else if (fold && isAsciiLetter(c) && i + 2 < p.size() && p[i + 1] == '-' &&
                       isAsciiLetter(p[i + 2])) {
                out += {c, '-', p[i + 2], otherCase(c), '-', otherCase(p[i + 2])};
                i += 2;
            } else if (fold && isAsciiLetter(c)) {
                out += {c, otherCase(c)};
            } else {
                out += c;
            }
            continue;
        }
        if (c == '[') {
            inClass = true;
            out += c;
            if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
            if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i]; // literal ] first in class
        } else if (c == '(') {
            ++depth;
            if (p.substr(i, 4) == "(?i:") {
                foldDepths.push_back(depth);
                out += "(?:";
                i += 3;
            } else {
                out += c;
            }
        } else if (c == ')') {
            if (!foldDepths.empty() && foldDepths.back() == depth) foldDepths.pop_back();
            --depth;
            out += c;
        } else if (fold && isAsciiLetter(c)) {
            out += {'[', c, otherCase(c), ']'};
        } else {
            out += c;
        }
    }
    return out;
}

Result<Regex> Regex::compile(std::string_view onigPattern, const std::string& what) {
    const std::string pattern = translateOnigurumaPattern(onigPattern);
    int err = 0;
    PCRE2_SIZE errOffset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &errOffset, nullptr);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return Status(ErrorCode::Malformed, what + ": regex does not compile at offset " +
                                                std::to_string(errOffset) + ": " +
                                                reinterpret_cast<const char*>(msg));
    }
    // A missing JIT (some architectures) only costs speed; pcre2_match falls back to the
    // interpreter by itself.
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    auto holder = std::make_shared<Code>();
    holder->code = code;
    Regex r;
    r.m_code = std::move(holder);
    return r;
}

void Regex::findAll(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(m_code->code, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;
    while (pos <= text.size()) {
        // The input was sanitized, so PCRE2's own UTF check (a rescan per call) is redundant.
        const int rc =
            pcre2_match(m_code->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc < 0) break; // no match (or a resource limit: the rest stays one unmatched gap)
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t b = ov[0], e = ov[1];
        if (e > b) {
            out.emplace_back(b, e);
            pos = e;
        } else {
            // Empty match: step over one character, as Oniguruma's find_iter does.
            if (b >= text.size()) break;
            size_t next = b + 1;
            while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80)
                ++next;
            pos = next;
        }
    }
    pcre2_match_data_free(md);
}

} // namespace coli
