#include "runtime/stop_matcher.h"

#include <algorithm>

namespace coli {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
    for (auto& s : stops)
        if (!s.empty()) m_stops.push_back(std::move(s));
}

StopMatcher::Output StopMatcher::push(std::string_view text) {
    Output out;
    if (m_stopped) return out;
    m_held.append(text);

    // Earliest complete stop string: everything before it is shown, the rest dropped.
    size_t first = std::string::npos;
    for (const auto& s : m_stops)
        first = std::min(first, m_held.find(s));
    if (first != std::string::npos) {
        out.text = m_held.substr(0, first);
        out.stopped = m_stopped = true;
        m_held.clear();
        return out;
    }
    // Earliest position whose suffix is a proper prefix of some stop string: hold from there.
    // (Text before it cannot be part of any stop string, whatever comes next.)
    size_t hold = m_held.size();
    for (size_t i = 0; i < m_held.size() && hold == m_held.size(); ++i) {
        const std::string_view tail = std::string_view(m_held).substr(i);
        for (const auto& s : m_stops) {
            if (tail.size() < s.size() && s.compare(0, tail.size(), tail) == 0) {
                hold = i;
                break;
            }
        }
    }
    out.text = m_held.substr(0, hold);
    m_held.erase(0, hold);
    return out;
}

StopMatcher::Output StopMatcher::finish() {
    Output out;
    if (m_stopped) return out;
    out.text = std::move(m_held);
    m_held.clear();
    return out;
}

} // namespace coli
