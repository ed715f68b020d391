#pragma once
// Small string helpers shared by the engine's parts. Pure functions, thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

namespace coli {

// Replaces every occurrence of `from` in s by `to`, scanning left to right without overlaps and
// without rescanning inserted text. An empty `from` leaves s unchanged.
void replaceAll(std::string& s, std::string_view from, std::string_view to);

// Appends the UTF-8 encoding (1 to 4 bytes, RFC 3629) of cp to out. cp should be a Unicode
// scalar value (<= U+10FFFF, not a surrogate); others are encoded by the same bit pattern.
void appendUtf8(std::string& out, char32_t cp);

// bytes in mebibytes for messages: "3.0 MiB" (decimals 1) or "3.38 MiB" (decimals 2).
std::string mibString(uint64_t bytes, int decimals = 1);

// ASCII letters lowered (other bytes unchanged): HTTP header names, URL schemes and hosts, hex.
std::string asciiLower(std::string s);
// s without leading and trailing spaces, tabs, CR and LF.
std::string trimAscii(std::string_view s);
// n bytes as 2n lower-case hex digits (digests).
std::string hexLower(const unsigned char* data, size_t n);

} // namespace coli
