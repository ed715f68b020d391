#include "engine_worker.h"

#include "runtime/context_fit.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"

#include "user_messages.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

namespace coli::app {

namespace {
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}
} // namespace

EngineWorker::EngineWorker(WorkerOptions opt, std::function<void()> wake)
    : m_opt(opt), m_wake(std::move(wake)), m_ring(opt.ringCapacity), m_thread([this] { run(); }) {}

EngineWorker::~EngineWorker() {
    quit();
}

void EngineWorker::quit() {
    // relaxed: only read by publish()'s backpressure loop as a "stop waiting" hint; the join below
    // is the real synchronisation.
    m_quitting.store(true, std::memory_order_relaxed);
    m_queue.push(Command{CommandKind::Quit});
    if (m_thread.joinable()) m_thread.join();
}

void EngineWorker::publish(EngineEvent ev) {
    for (;;) {
        switch (m_ring.tryPush(ev)) {
        case PushResult::PushedWake:
            if (m_wake) m_wake();
            return;
        case PushResult::Pushed:
            return;
        case PushResult::Full:
            if (m_quitting.load(std::memory_order_relaxed)) return; // nobody will read it
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            break;
        }
    }
}

void EngineWorker::run() {
    for (;;) {
        Command c = m_queue.pop();
        switch (c.kind) {
        case CommandKind::Quit:
            m_session.reset();
            m_model.reset();
            return;
        case CommandKind::Load:
            doLoad(c);
            break;
        case CommandKind::Generate:
            doGenerate(c);
            break;
        case CommandKind::Reset:
            if (m_session) m_session->reset();
            break;
        case CommandKind::Cancel: // handled inside the queue, never delivered
            break;
        }
    }
}

void EngineWorker::doLoad(const Command& c) {
    m_session.reset(); // references the model: drop it first
    m_model.reset();
    ModelLoadOptions mo;
    mo.threads = c.load.threads > 0 ? c.load.threads : m_opt.threads;
    mo.tiers.directIo = c.load.directIo;
    mo.tiers.prefetch = c.load.prefetch;
    // Routed experts stream from disk through the expert cache (docs/tiers.md); its budget is
    // set from MemAvailable once the dense weights are in.
    mo.tiers.stream = true;
    // Progress callbacks are rare (per stage / per tensor group): each one is an event.
    auto progress = [&](const LoadProgress& p) {
        publish(EngineEvent::progress(c.id, p.stage, p.fraction));
    };
    auto lm = LoadedModel::load(c.dir, mo, progress, c.cancel.get());
    if (!lm.isOk()) {
        publish(EngineEvent::make(EventKind::LoadFailed, c.id, lm.status().message()));
        return;
    }
    // Chat needs a template to turn the conversation into a prompt: refuse now rather than on
    // the first message.
    if (lm.value()->chatTemplate() == nullptr) {
        const std::string cfg =
            (std::filesystem::path(c.dir) / "tokenizer_config.json").lexically_normal().string();
        publish(EngineEvent::make(EventKind::LoadFailed, c.id,
                                  cfg + " has no chat template ('chat_template'): the app needs "
                                        "one to format a conversation. Open a chat (instruct) "
                                        "model folder."));
        return;
    }
    m_model = std::move(lm.value());
    std::string budget;
    if (tiers::ExpertCache* cache = m_model->model().expertCache()) {
        Result<uint64_t> avail = memAvailableBytes();
        // The Settings view's budget, else one from MemAvailable; never under the minimum.
        const uint64_t want = c.load.ramBudgetBytes > 0 ? c.load.ramBudgetBytes
                              : avail                   ? defaultExpertBudget(*cache, *avail)
                                                        : 0;
        (void)cache->setBudget(std::max(want, cache->minimumBudget()));
        budget = formatBytes(cache->budget());
    }
    m_session = std::make_unique<Session>(*m_model);
    const std::string name = std::filesystem::path(c.dir).lexically_normal().filename().string();
    const ModelSummary sum = m_model->model().summary();
    std::ostringstream info;
    info.precision(3);
    info << m_model->model().config().architecture << " · " << double(sum.totalParams) / 1e6
         << " M params · " << sum.expertsPerLayer << " experts/layer";
    if (!budget.empty()) info << " · experts streamed, " << budget << " RAM";
    EngineEvent ev = EngineEvent::make(EventKind::Loaded, c.id, name.empty() ? c.dir : name);
    ev.info = info.str();
    ev.contextLength = m_model->model().config().maxPositions;
    ev.tokenizer = m_model->sharedTokenizer();
    // What the template adds around one user message (its role markers, the generation prompt).
    if (auto wrapped = m_model->renderChat({ChatMessage{"user", ""}}, true, c.cancel.get()))
        ev.promptOverheadTokens = int(m_model->tokenizer().encode(wrapped.value(), false).size());
    publish(std::move(ev));
    // Problems that did not stop the load (e.g. ignored generation_config.json keys): the user
    // should know the defaults they get are not the model's.
    std::string warnings;
    for (const std::string& w : m_model->warnings())
        warnings += (warnings.empty() ? "" : "\n") + w;
    if (!warnings.empty()) publish(EngineEvent::make(EventKind::Notice, c.id, warnings));
}

void EngineWorker::doGenerate(const Command& c) {
    const auto t0 = Clock::now();
    TelemetrySnapshot snap;
    snap.id = c.id;
    snap.generating = true;
    m_telemetry.publish(snap);
    auto fail = [&](const std::string& msg) {
        snap.generating = false;
        m_telemetry.publish(snap);
        publish(EngineEvent::make(EventKind::Failed, c.id, msg));
    };
    if (!m_model || !m_session) return fail("no model loaded: open a model folder first");
    // Rendered with the template (which writes BOS where the family wants it, so no
    // post-processor specials, as transformers' apply_chat_template(tokenize=True) does); when
    // the conversation outgrows the context, the oldest exchanges are left out (rolling window)
    // with room kept for the answer.
    // Stop and closing the window set c.cancel, which also stops a slow template render.
    auto fitted = fitChatToContext(*m_model, c.messages, c.params.maxNewTokens, c.cancel.get());
    if (!fitted.isOk() && fitted.status().code() == ErrorCode::Cancelled) {
        // As a generation stopped before its first token: not an error, the KV cache untouched.
        snap.generating = false;
        snap.elapsedSeconds = secondsSince(t0);
        m_telemetry.publish(snap);
        EngineEvent done = EngineEvent::make(EventKind::Finished, c.id, {});
        done.stats.stopReason = StopReason::Cancelled;
        return publish(std::move(done));
    }
    if (!fitted.isOk() && fitted.status().code() == ErrorCode::InvalidArgument &&
        fitted.status().message().find("too long for the model's context") != std::string::npos) {
        // The window refuses such a message before sending it (EngineController::send); this is
        // the rare case its estimate missed (e.g. a system message): the same words.
        const int context = m_model->model().config().maxPositions;
        const int reserve = std::clamp(c.params.maxNewTokens, 0, context / 2);
        const Tokenizer& tok = m_model->tokenizer();
        const int own = int(tok.encode(c.messages.back().content, false).size());
        // What the kept messages take around it: a leading system message, the template's wrapping.
        std::vector<ChatMessage> frame;
        if (c.messages.size() > 1 && c.messages.front().role == "system")
            frame.push_back(c.messages.front());
        frame.push_back(ChatMessage{c.messages.back().role, ""});
        auto wrapped = m_model->renderChat(frame, true, c.cancel.get());
        const int around = wrapped ? int(tok.encode(wrapped.value(), false).size()) : 0;
        const int limit = context - reserve - around;
        if (limit <= 0) // the system message alone leaves no room: the message is not the problem
            return fail(systemMessageTooLong(around, context - reserve));
        return fail(tooLongForContext(own, limit));
    }
    if (!fitted.isOk()) return fail(fitted.status().message());
    const std::vector<int32_t>& ids = fitted.value().ids;
    if (const int dropped = fitted.value().droppedMessages; dropped > 0)
        publish(EngineEvent::make(EventKind::Notice, c.id,
                                  std::to_string(dropped) + " older message" +
                                      (dropped == 1 ? " was" : "s were") +
                                      " left out of the prompt to fit the model's " +
                                      std::to_string(fitted.value().contextTokens) +
                                      "-token context: the answer does not see them."));

    Clock::time_point firstPiece{};
    auto onPiece = [&](std::string_view piece) {
        if (snap.generatedTokens == 0) firstPiece = Clock::now();
        ++snap.generatedTokens;
        snap.elapsedSeconds = secondsSince(t0);
        const double dt = secondsSince(firstPiece);
        snap.tokensPerSecond = dt > 0 ? (snap.generatedTokens - 1) / dt : 0;
        m_telemetry.publish(snap);
        publish(EngineEvent::make(EventKind::Piece, c.id, std::string(piece)));
    };
    GenerateParams params = c.params;
    params.sampler = resolveSampling(c.sampling, m_model->generationConfig());
    if (Status st = validate(params); !st.isOk()) return fail(samplingErrorForUser(st.message()));
    auto stats = m_session->generate(ids, params, onPiece, c.cancel.get());
    if (!stats.isOk()) {
        return fail(stats.status().message());
    }
    snap.generating = false;
    snap.elapsedSeconds = secondsSince(t0);
    snap.tokensPerSecond = stats.value().decodeTokensPerSecond;
    m_telemetry.publish(snap);
    EngineEvent done = EngineEvent::make(EventKind::Finished, c.id, {});
    done.stats = std::move(stats.value());
    publish(std::move(done));
}

} // namespace coli::app
