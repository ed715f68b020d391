#pragma once
// Holds back streamed text that could be the start of a stop string, so that the caller never
// shows a stop string (or a piece of one) even when it arrives split across several tokens.
//
//   StopMatcher m({"\nUser:"});
//   auto r = m.push("Hello\nUs");   // r.text == "Hello", "\nUs" held back
//   r = m.push("er: hi");           // r.text == "", r.stopped == true (the stop string is gone)
//   r = m.finish();                 // whatever is still held when generation ends for another
//   reason
//
// Cost: O(held * sum of stop lengths) per push; held text is shorter than the longest stop string
// except right after a push, so this is negligible next to a forward pass.
// Thread-safety: one instance per stream.
#include <string>
#include <string_view>
#include <vector>

namespace coli {

class StopMatcher {
public:
    struct Output {
        std::string text;     // safe to show now
        bool stopped = false; // a stop string was found; text ends right before it
    };

    // Empty strings in `stops` are ignored (the caller validates them).
    explicit StopMatcher(std::vector<std::string> stops);

    // Appends text; returns what can be shown. After stopped, further pushes return nothing.
    Output push(std::string_view text);
    // Releases the held tail (it cannot become a stop string any more).
    Output finish();

    bool stopped() const { return m_stopped; }

private:
    std::vector<std::string> m_stops;
    std::string m_held;
    bool m_stopped = false;
};

} // namespace coli
