#pragma once
// UTF-8 helpers shared by the tokenizer's parts. Internal header (not part of the engine API).
// All functions are pure and thread-safe.
#include <cstddef>
#include <string>
#include <string_view>

namespace coli::utf8 {

// Decodes the code point starting at s[i] and advances i past it. Precondition: s is valid UTF-8
// (the tokenizer sanitizes its input first) and i < s.size().
char32_t next(std::string_view s, size_t& i);

// (Encoding: appendUtf8 in core/strings.h.)

// Length of the longest prefix of s after which a WHATWG UTF-8 decoder is back in its initial
// state: everything except a trailing, so far valid but incomplete multi-byte sequence. Decoding
// s[0, n) and s[n, end) separately with sanitizeUtf8 then gives the same text as decoding s whole.
size_t settledPrefix(std::string_view s);

// Unicode White_Space property (the set Oniguruma's and Rust regex's \s match).
bool isWhiteSpace(char32_t cp);

// Rust regex's Unicode \w: letters, marks, decimal digits, connector punctuation, letter numbers
// and the joiners (used by added tokens' single_word rule).
bool isWordChar(char32_t cp);

} // namespace coli::utf8
