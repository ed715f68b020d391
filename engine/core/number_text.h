#pragma once
// Numbers typed by a user (command-line flags of coli, colibri and the benchmarks), parsed whole
// and range-checked, with the problem in plain words. Each parser returns "" and sets *out, or
// the message (without the flag's name: the caller prefixes it), e.g.
//   "18446744073709551616 is out of range (0 to 18446744073709551615)", "'abc' is not an integer".
// A value that does not fit the target type is "out of range", never wrapped or saturated.
// Thread-safety: pure functions.
#include <cstdint>
#include <string>
#include <string_view>

namespace coli {

// A decimal integer: optional sign, then digits only (no spaces, no fraction, no exponent).
std::string parseInteger(std::string_view text, int64_t lo, int64_t hi, int64_t* out);
std::string parseUnsigned(std::string_view text, uint64_t lo, uint64_t hi, uint64_t* out);

// A finite decimal number ("0.5", "-2", "1e-3"); lo and hi inclusive (may be +-infinity).
// "'x' is not a number", "1e400 is out of range (...)".
std::string parseDecimal(std::string_view text, double lo, double hi, double* out);

// A byte count with an optional unit: "1500000", "512MiB", "2GiB", "2 G". Units (case-insensitive,
// all powers of 1024): B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB, P/PB/PiB, E/EB/EiB. Messages:
// "-1GiB: a size cannot be negative", "'2XB' is not a size (...)", "20EiB is out of range (at most
// 18446744073709551615 bytes)".
std::string parseByteSize(std::string_view text, uint64_t* out);

// The shortest text that reads back as v ("0.5", "60", "1e+20"): for messages.
std::string numberString(double v);

} // namespace coli
