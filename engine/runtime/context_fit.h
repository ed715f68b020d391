#pragma once
// Rolling context for chat: when a conversation no longer fits the model's context, the oldest
// exchanges are left out of the prompt (LM Studio's "rolling window" overflow policy), so a chat
// can go on past the context length instead of stopping. The conversation itself is not changed;
// only the prompt sent to the model is.
#include "chat/chat_template.h"
#include "core/status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coli {

class LoadedModel;

struct FittedPrompt {
    std::vector<int32_t> ids; // the rendered, tokenised prompt (generation prompt appended)
    int droppedMessages = 0;  // leading messages (after a system message) left out
    int contextTokens = 0;    // the model's context (max_position_embeddings)
};

// The rolling window's unit of dropping, for fitChatToContext and for estimates without a model
// (the app's context meter of a reopened chat): the index of the first message kept when the
// first `drop` droppable messages (those from firstDroppable on, of n) are left out. Whole
// exchanges only: an assistant reply that would open the kept part goes too (a prompt that opens
// with an orphan reply confuses most templates and models); the last message is always kept.
// isAssistant(i): whether message i is the assistant's. Pure.
template <class IsAssistant>
size_t firstKeptMessage(size_t n, size_t firstDroppable, size_t drop, IsAssistant isAssistant) {
    size_t i = firstDroppable + drop;
    while (i + 1 < n && isAssistant(i))
        ++i;
    return i;
}

// Renders `messages` with the model's chat template (generation prompt appended) and tokenises
// it; while prompt + reserveTokens exceeds the context, drops the oldest message after an
// optional leading system message, always a whole user turn with the assistant reply that
// follows it, and never the last message. reserveTokens: room kept for the answer (tokens;
// clamped to [0, context / 2] so a huge --max-tokens cannot leave no room for the prompt).
// cancel (may be null, may be set from any thread) is passed to every render, and checked between
// attempts: once true, the call returns Cancelled within microseconds.
// Errors: the template's render errors; InvalidArgument when even the system message plus the
// last message alone do not fit (the message gives both token counts); InvalidArgument for an
// empty conversation; Cancelled. Cost: one render + encode per attempt (binary search over the
// number dropped, so O(log n) renders). Thread-safety: const on the model.
Result<FittedPrompt> fitChatToContext(const LoadedModel& model,
                                      const std::vector<ChatMessage>& messages, int reserveTokens,
                                      const std::atomic<bool>* cancel = nullptr);

} // namespace coli
