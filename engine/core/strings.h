#pragma once
// Small string helpers shared by the engine's parts. Pure functions, thread-safe.
#include <string>
#include <string_view>

namespace coli {

// Replaces every occurrence of `from` in s by `to`, scanning left to right without overlaps and
// without rescanning inserted text. An empty `from` leaves s unchanged.
void replaceAll(std::string& s, std::string_view from, std::string_view to);

} // namespace coli
