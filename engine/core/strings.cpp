#include "core/strings.h"

namespace coli {

void replaceAll(std::string& s, std::string_view from, std::string_view to) {
    if (from.empty()) return;
    std::string out;
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out += to;
    }
    if (pos == 0) return;
    out.append(s, pos, std::string::npos);
    s = std::move(out);
}

} // namespace coli
