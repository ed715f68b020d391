#pragma once
// Events from the engine thread to the GUI thread, carried by the EventRing (lossless, in order).
// Plain values; the GUI thread turns them into property and list-model changes.
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"
#include "user_pin_change.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace coli::learning {
struct UsageSnapshot;
}

namespace coli::app {

struct ProbeOutcome;

enum class EventKind {
    LoadProgress,  // stage, fraction
    Loaded,        // text = model name (directory base name), info = one-line summary,
                   // contextLength = max_position_embeddings
    LoadFailed,    // text = error message (names the file)
    Piece,         // text = a piece of the answer (complete UTF-8)
    Finished,      // stats
    Failed,        // text = error message of a generation
    Notice,        // text = a message for the user that is not an error (e.g. older messages
                   // left out of the prompt to fit the context)
    UserPin,       // a UserPin command ran: pin = the change, pinApplied = whether the cache took
                   // it (false: refused, text says why), text = the message for the user
    ProbeProgress, // tokensDone of tokensTotal of the running topic probe
    ProbeFinished, // probe = the run's counts, labels, positions and figures
    ProbeFailed,   // text = why (names the file); cancelled = it was stopped, not an error
    SessionKv,     // a chat's KV file was saved, opened or deleted: kvSession holds kvBytes on disk
                   // (0: none); kvDeleted = other chats whose files the cap deleted; text = a
                   // warning for the user, or "" (the chat goes on either way)
    VramBudget,    // a requested VRAM budget ran (EngineWorker::requestVramBudget): text = why it
                   // was refused ("" when applied); vramBudgetBytes = the budget in force now
};

struct EngineEvent {
    EventKind kind = EventKind::Piece;
    uint64_t id = 0;  // the request id of the command that produced it
    std::string text; // see EventKind
    std::string info;
    double fraction = 0;
    int contextLength = 0; // Loaded: the model's context length in tokens
    // Loaded: what the model info panel shows.
    ModelSummary summary;
    std::string architecture; // config.json "architectures"[0]
    int layers = 0, topK = 0; // num_hidden_layers, num_experts_per_tok
    int droppedMessages = 0;  // Finished: older messages the rolling window left out
    GenerateStats stats;
    // Loaded: the model's tokenizer, shared read-only (the GUI counts a message's tokens before
    // sending it), and the tokens a one-message conversation takes beyond the message itself
    // (the chat template's wrapping and the generation prompt).
    std::shared_ptr<const Tokenizer> tokenizer;
    int promptOverheadTokens = 0;
    // Finished, when the loaded model learns (its usage was applied): the heat and pins after
    // the turn (learning::endTurnSnapshot), for the storage thread to save.
    std::shared_ptr<const learning::UsageSnapshot> usage;
    UserPinChange pin;       // UserPin
    bool pinApplied = false; // UserPin
    // The topic probe (ProbeProgress, ProbeFinished, ProbeFailed).
    int64_t tokensDone = 0, tokensTotal = 0;
    std::shared_ptr<const ProbeOutcome> probe;
    bool cancelled = false;
    // SessionKv.
    int64_t kvSession = 0;
    uint64_t kvBytes = 0;
    std::vector<int64_t> kvDeleted;
    uint64_t vramBudgetBytes = 0; // VramBudget

    static EngineEvent make(EventKind k, uint64_t id, std::string text) {
        EngineEvent e;
        e.kind = k;
        e.id = id;
        e.text = std::move(text);
        return e;
    }
    static EngineEvent progress(uint64_t id, std::string stage, double fraction) {
        EngineEvent e = make(EventKind::LoadProgress, id, std::move(stage));
        e.fraction = fraction;
        return e;
    }
};

// Latest-wins snapshot of the running generation (threading contract rule 4): written by the
// engine thread per token, sampled by the GUI at ~30 Hz. Values, no history.
struct TelemetrySnapshot {
    uint64_t id = 0; // request id of the generation being measured (0: none yet)
    bool generating = false;
    int generatedTokens = 0;    // pieces emitted so far in this answer
    double elapsedSeconds = 0;  // since the request started
    double tokensPerSecond = 0; // generatedTokens / time since the first piece
};

} // namespace coli::app
