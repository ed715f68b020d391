#include "tokenizer/utf8.h"

#include "tokenizer/tokenizer.h"

#include <utf8proc.h>

namespace coli {
namespace {

// Bounds for the second byte of a sequence, per lead byte (Unicode Table 3-7, "well-formed UTF-8
// byte sequences"); later continuation bytes are always 0x80..0xBF.
struct LeadInfo {
    int length; // total sequence length; 0 for a byte that cannot start a sequence
    unsigned char lo, hi;
};

LeadInfo leadInfo(unsigned char b) {
    if (b < 0x80) return {1, 0, 0};
    if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

// Scans one sequence at s[i]. Returns the number of bytes that form a valid character (> 0), or
// the negated length of the maximal invalid subpart (< 0). `truncated` tells whether the sequence
// was cut by the end of s while still valid so far.
int scan(std::string_view s, size_t i, bool& truncated) {
    truncated = false;
    const auto b0 = static_cast<unsigned char>(s[i]);
    const LeadInfo info = leadInfo(b0);
    if (info.length == 1) return 1;
    if (info.length == 0) return -1;
    for (int k = 1; k < info.length; ++k) {
        if (i + k >= s.size()) {
            truncated = true;
            return -k;
        }
        const auto b = static_cast<unsigned char>(s[i + k]);
        const unsigned char lo = k == 1 ? info.lo : 0x80;
        const unsigned char hi = k == 1 ? info.hi : 0xBF;
        if (b < lo || b > hi) return -k;
    }
    return info.length;
}

} // namespace

std::string sanitizeUtf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        bool truncated = false;
        const int n = scan(s, i, truncated);
        if (n > 0) {
            out.append(s.data() + i, static_cast<size_t>(n));
            i += static_cast<size_t>(n);
        } else {
            out.append("\xEF\xBF\xBD"); // U+FFFD per maximal subpart
            i += static_cast<size_t>(-n);
        }
    }
    return out;
}

namespace utf8 {

char32_t next(std::string_view s, size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    int len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
    char32_t cp = b0 & (0x7F >> len);
    for (int k = 1; k < len && i + k < s.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += static_cast<size_t>(len);
    return cp;
}

size_t settledPrefix(std::string_view s) {
    // Only the last (at most 3) bytes can belong to an incomplete sequence.
    const size_t from = s.size() > 3 ? s.size() - 3 : 0;
    for (size_t i = from; i < s.size(); ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b >= 0x80 && b < 0xC0) continue; // continuation byte: not a sequence start
        bool truncated = false;
        const int n = scan(s, i, truncated);
        if (n < 0 && truncated) return i;
    }
    return s.size();
}

bool isWhiteSpace(char32_t cp) {
    switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool isWordChar(char32_t cp) {
    if (cp == 0x200C || cp == 0x200D) return true;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

} // namespace utf8
} // namespace coli
