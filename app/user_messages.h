#pragma once
// Engine messages reworded for the people who read them (the window, the command line).
// Qt-free: used on the engine thread too. Thread-safety: pure functions.
#include <array>
#include <string>
#include <string_view>
#include <utility>

namespace coli::app {

// The sampler's validate() names its fields ("temperature must be in [0, 100] ..."); the user
// set them with flags, so name the flag: "--temp must be in [0, 100] ...". Other messages are
// returned unchanged.
inline std::string samplingErrorForUser(const std::string& msg) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kFlags{{
        {"temperature", "--temp"},
        {"topK", "--top-k"},
        {"topP", "--top-p"},
        {"minP", "--min-p"},
        {"repeatPenalty", "--repeat-penalty"},
        {"repeatLastN", "the repetition window"},
    }};
    for (const auto& [field, flag] : kFlags) {
        const std::string prefix = std::string(field) + " must ";
        if (msg.rfind(prefix, 0) == 0) return std::string(flag) + msg.substr(field.size());
    }
    return msg;
}

// A message that cannot fit the model's context even alone, in words that say what to do:
// "This message is about 900 tokens; with room kept for the answer, the model reads at most 240.
// Shorten it or split it into parts."
inline std::string tooLongForContext(int messageTokens, int maxTokens) {
    return "This message is about " + std::to_string(messageTokens) +
           " tokens; with room kept for the answer, the model reads at most " +
           std::to_string(maxTokens < 0 ? 0 : maxTokens) + ". Shorten it or split it into parts.";
}

// The system message (with the template's wrapping) leaves no room for any message: "The system
// message is about 80 tokens; with room kept for the answer, the model reads at most 24. Shorten
// the system message."
inline std::string systemMessageTooLong(int systemTokens, int maxTokens) {
    return "The system message is about " + std::to_string(systemTokens) +
           " tokens; with room kept for the answer, the model reads at most " +
           std::to_string(maxTokens < 0 ? 0 : maxTokens) + ". Shorten the system message.";
}

} // namespace coli::app
