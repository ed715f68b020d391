#include "runtime/context_fit.h"

#include "runtime/session.h"

#include <algorithm>

namespace coli {

namespace {

// Messages kept when the first `drop` droppable messages are left out (firstKeptMessage).
std::vector<ChatMessage> keep(const std::vector<ChatMessage>& all, size_t firstDroppable,
                              size_t drop) {
    std::vector<ChatMessage> out(all.begin(), all.begin() + firstDroppable);
    const size_t i = firstKeptMessage(all.size(), firstDroppable, drop,
                                      [&](size_t m) { return all[m].role == "assistant"; });
    out.insert(out.end(), all.begin() + i, all.end());
    return out;
}

} // namespace

Result<FittedPrompt> fitChatToContext(const LoadedModel& model,
                                      const std::vector<ChatMessage>& messages, int reserveTokens,
                                      const std::atomic<bool>* cancel) {
    if (messages.empty())
        return Status(ErrorCode::InvalidArgument, "empty conversation: nothing to answer");
    FittedPrompt out;
    out.contextTokens = model.model().config().maxPositions;
    const int reserve = std::clamp(reserveTokens, 0, out.contextTokens / 2);
    const int budget = out.contextTokens - reserve;
    auto tokens = [&](const std::vector<ChatMessage>& m) -> Result<std::vector<int32_t>> {
        // Encoding a long prompt takes a while too: look at the flag before each attempt.
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status(ErrorCode::Cancelled,
                          "fitting the conversation to the context cancelled");
        auto text = model.renderChat(m, /*addGenerationPrompt=*/true, cancel);
        if (!text.isOk()) return text.status();
        return model.tokenizer().encode(text.value(), false);
    };
    auto all = tokens(messages);
    if (!all.isOk()) return all.status();
    if (int(all.value().size()) <= budget) {
        out.ids = std::move(all.value());
        return out;
    }
    const size_t firstDroppable = messages.front().role == "system" ? 1 : 0;
    if (messages.size() <= firstDroppable + 1) {
        return Status(ErrorCode::InvalidArgument,
                      "the message is too long for the model's context: " +
                          std::to_string(all.value().size()) + " prompt tokens + " +
                          std::to_string(reserve) + " reserved for the answer > " +
                          std::to_string(out.contextTokens));
    }
    // Binary search for the fewest dropped messages that fit (fewer dropped = longer prompt).
    size_t lo = 1, hi = messages.size() - 1 - firstDroppable; // hi: all but the last dropped
    auto most = tokens(keep(messages, firstDroppable, hi));
    if (!most.isOk()) return most.status();
    if (int(most.value().size()) > budget) {
        return Status(ErrorCode::InvalidArgument,
                      "the last message is too long for the model's context: " +
                          std::to_string(most.value().size()) + " prompt tokens + " +
                          std::to_string(reserve) + " reserved for the answer > " +
                          std::to_string(out.contextTokens));
    }
    std::vector<int32_t> best = std::move(most.value());
    size_t bestDrop = hi;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        auto t = tokens(keep(messages, firstDroppable, mid));
        if (!t.isOk()) return t.status();
        if (int(t.value().size()) <= budget) {
            best = std::move(t.value());
            bestDrop = mid;
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    const auto kept = keep(messages, firstDroppable, bestDrop);
    out.ids = std::move(best);
    out.droppedMessages = int(messages.size() - kept.size());
    return out;
}

} // namespace coli
