#pragma once
// GPT-2's byte-level alphabet: every byte maps to one printable code point so that BPE can work
// on text without spaces or control characters (source: openai/gpt-2 encoder.py bytes_to_unicode,
// as Hugging Face's byte_level.rs uses it). Internal header; the tables are built once and are
// read-only afterwards (thread-safe).
#include <optional>
#include <string>
#include <string_view>

namespace coli::byte_level {

// The code point byte b maps to (printable Latin-1 bytes map to themselves; the others to
// U+0100 upwards, in byte order).
char32_t byteToChar(unsigned char b);
// The byte a code point stands for, if it is one of the 256 alphabet characters.
std::optional<unsigned char> charToByte(char32_t cp);

// Appends the alphabet spelling of raw bytes to out (one code point per byte).
void encodeBytes(std::string_view bytes, std::string& out);
// Appends the bytes a byte-level token spells. Returns false (appending nothing) when the token
// holds a character outside the alphabet; the caller then uses the token's own bytes, as Hugging
// Face's ByteLevel decoder does.
bool decodeToken(std::string_view token, std::string& out);

// GPT-2's pre-tokenizer pattern (ByteLevel with use_regex = true), in Oniguruma syntax.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

} // namespace coli::byte_level
