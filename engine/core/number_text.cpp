#include "core/number_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace coli {

namespace {

using Wide = __int128;

// Sign and digits -> a 128-bit value, saturated far beyond any 64-bit range (the range check
// then reports it). false when the text is not a decimal integer.
bool wideInteger(std::string_view t, Wide* out) {
    bool negative = false;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
        negative = t[0] == '-';
        t.remove_prefix(1);
    }
    if (t.empty()) return false;
    constexpr Wide kCap = Wide(1) << 100;
    Wide v = 0;
    for (char c : t) {
        if (c < '0' || c > '9') return false;
        if (v < kCap) v = v * 10 + (c - '0');
    }
    *out = negative ? -v : v;
    return true;
}

std::string quoted(std::string_view t) {
    std::string q;
    q.reserve(t.size() + 2);
    q += '\'';
    q += t;
    q += '\'';
    return q;
}

template <class T> std::string rangeMessage(std::string_view text, T lo, T hi) {
    return std::string(text) + " is out of range (" + std::to_string(lo) + " to " +
           std::to_string(hi) + ")";
}

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

} // namespace

std::string parseInteger(std::string_view text, int64_t lo, int64_t hi, int64_t* out) {
    Wide v = 0;
    if (!wideInteger(text, &v)) return quoted(text) + " is not an integer";
    if (v < Wide(lo) || v > Wide(hi)) return rangeMessage(text, lo, hi);
    *out = int64_t(v);
    return {};
}

std::string parseUnsigned(std::string_view text, uint64_t lo, uint64_t hi, uint64_t* out) {
    Wide v = 0;
    if (!wideInteger(text, &v)) return quoted(text) + " is not an integer";
    if (v < Wide(lo) || v > Wide(hi)) return rangeMessage(text, lo, hi);
    *out = uint64_t(v);
    return {};
}

std::string numberString(double v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

std::string parseDecimal(std::string_view text, double lo, double hi, double* out) {
    std::string_view t = text;
    if (!t.empty() && t[0] == '+') t.remove_prefix(1); // from_chars takes '-' only
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    const bool whole = !t.empty() && end == t.data() + t.size();
    const auto range = [&] {
        return std::string(text) + " is out of range (" + numberString(lo) + " to " +
               numberString(hi) + ")";
    };
    if (ec == std::errc::result_out_of_range && whole) return range(); // 1e400, 1e-400
    if (ec != std::errc() || !whole || !std::isfinite(v)) return quoted(text) + " is not a number";
    if (v < lo || v > hi) return range();
    *out = v;
    return {};
}

std::string parseByteSize(std::string_view text, uint64_t* out) {
    const auto bad = [&] {
        return quoted(text) + " is not a size (a byte count, or a number with a unit: KiB, "
                              "MiB, GiB, TiB)";
    };
    if (!text.empty() && text[0] == '-') return std::string(text) + ": a size cannot be negative";
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        ++digits;
    if (digits == 0) return bad();
    std::string_view unit = text.substr(digits);
    while (!unit.empty() && unit[0] == ' ')
        unit.remove_prefix(1);
    std::string u;
    for (char c : unit)
        u += lower(c);
    static constexpr std::array<char, 7> kPrefixes = {'b', 'k', 'm', 'g', 't', 'p', 'e'};
    int shift = -1;
    if (u.empty()) {
        shift = 0;
    } else {
        for (size_t i = 0; i < kPrefixes.size(); ++i) {
            const char p = kPrefixes[i];
            if (i == 0 ? u == "b"
                       : (u == std::string(1, p) || u == std::string(1, p) + "b" ||
                          u == std::string(1, p) + "ib"))
                shift = int(i) * 10;
        }
    }
    if (shift < 0) return bad();
    Wide v = 0;
    if (!wideInteger(text.substr(0, digits), &v)) return bad();
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    if (v > Wide(max >> shift))
        return std::string(text) + " is out of range (at most " + std::to_string(max) + " bytes)";
    *out = uint64_t(v) << shift;
    return {};
}

} // namespace coli
