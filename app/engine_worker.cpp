#include "engine_worker.h"

#include "aio/io_pool.h"
#include "learning/learned_usage.h"
#include "runtime/context_fit.h"
#include "runtime/expert_budget.h"
#include "runtime/session_kv_dir.h"
#include "runtime/session_kv_file.h"
#include "tiers/expert_cache.h"

#include "probe_outcome.h"
#include "token_replay.h"
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

std::string joinLines(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines)
        out += (out.empty() ? "" : "\n") + l;
    return out;
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
        // Idle with expert reads in flight (pins being read after a load or a budget change):
        // the tier status is published again every 50 ms until they land, so the Tiers view
        // does not show a stale picture until the next token.
        std::optional<Command> next;
        while (!next) {
            if (m_tierState.residency.loadingExperts > 0) {
                next = m_queue.popFor(std::chrono::milliseconds(50));
                if (!next) publishTiers(0, nullptr);
            } else {
                next = m_queue.pop();
            }
        }
        Command c = std::move(*next);
        switch (c.kind) {
        case CommandKind::Quit:
            closeSessionKv();
            m_session.reset();
            m_model.reset();
            return;
        case CommandKind::Load:
            doLoad(c);
            break;
        case CommandKind::Generate:
            doGenerate(c);
            // After the Finished event: the answer is shown as done while its KV is written.
            if (m_kvDirty) saveSessionKv(c.id);
            break;
        case CommandKind::Reset:
            if (m_session) m_session->reset();
            closeSessionKv();
            break;
        case CommandKind::SessionKvBind:
            doSessionKvBind(c);
            break;
        case CommandKind::SessionKvDelete:
            doSessionKvDelete(c);
            break;
        case CommandKind::ApplySettings:
            applyPendingSettings();
            applyPendingVram(); // here only: between answers, never between two tokens
            break;
        case CommandKind::ApplyUsage:
            doApplyUsage(c);
            break;
        case CommandKind::UserPin:
            doUserPin(c);
            break;
        case CommandKind::TopicProbe:
            doTopicProbe(c);
            break;
        case CommandKind::Cancel: // handled inside the queue, never delivered
            break;
        }
    }
}

void EngineWorker::requestBudget(uint64_t bytes) {
    // One queued wake-up per pending value: a slider sends many requests, the latest wins.
    if (m_pendingBudget.exchange(bytes == kNoRequest ? kNoRequest - 1 : bytes,
                                 std::memory_order_relaxed) == kNoRequest)
        m_queue.push(Command{CommandKind::ApplySettings});
}

void EngineWorker::requestPrefetch(bool on) {
    if (m_pendingPrefetch.exchange(on ? 1 : 0, std::memory_order_relaxed) < 0)
        m_queue.push(Command{CommandKind::ApplySettings});
}

void EngineWorker::requestVramBudget(uint64_t bytes) {
    if (m_pendingVram.exchange(bytes == kNoRequest ? kNoRequest - 1 : bytes,
                               std::memory_order_relaxed) == kNoRequest)
        m_queue.push(Command{CommandKind::ApplySettings});
}

Status EngineWorker::setVramBudget(uint64_t bytes) {
    Model& model = m_model->model();
    const Status st = model.setVramBudget(bytes);
    // With a device sharing the system's memory the tier's bytes count in the RAM budget: its
    // ceiling moves with them (docs/gpu.md "Budget").
    if (tiers::ExpertCache* cache = model.expertCache()) {
        m_tierState.minimumBudget = cache->minimumBudget();
        m_tierState.maximumBudget = maximumExpertBudget(*cache);
    }
    return st;
}

void EngineWorker::applyPendingVram() {
    const uint64_t bytes = m_pendingVram.exchange(kNoRequest, std::memory_order_relaxed);
    if (bytes == kNoRequest || !m_model) return;
    const uint64_t before = m_model->model().vramBudget();
    const Status st = setVramBudget(bytes);
    EngineEvent ev =
        EngineEvent::make(EventKind::VramBudget, m_loadId,
                          st.isOk() ? std::string()
                                    : "The VRAM budget was not changed (" + formatBytes(before) +
                                          " stays): " + st.message());
    ev.vramBudgetBytes = m_model->model().vramBudget();
    updatePlan();
    publishTiers(0, nullptr); // first: the event's reader sees the status it describes
    publish(std::move(ev));
}

void EngineWorker::applyPendingSettings() {
    const uint64_t budget = m_pendingBudget.exchange(kNoRequest, std::memory_order_relaxed);
    const int prefetch = m_pendingPrefetch.exchange(-1, std::memory_order_relaxed);
    tiers::ExpertCache* cache = m_model ? m_model->model().expertCache() : nullptr;
    if (!cache || (budget == kNoRequest && prefetch < 0)) return;
    std::string dropped;
    if (budget != kNoRequest) {
        const uint64_t lo = cache->minimumBudget(), hi = m_tierState.maximumBudget;
        const size_t userPins = cache->userPins().size();
        // Within [lo, hi] setBudget cannot fail (it refuses only values below the minimum).
        (void)cache->setBudget(std::clamp(budget, lo, std::max(lo, hi)));
        // A hot-store smaller than the user pins drops the coldest of them (learned pins went
        // first); they stay saved, and the next load applies them again if they fit.
        if (const size_t now = cache->userPins().size(); now < userPins)
            dropped = userPinsDroppedByBudget(userPins - now, userPins, cache->pinCapacity());
    }
    if (prefetch >= 0) cache->setPrefetch(prefetch == 1);
    if (budget != kNoRequest) updatePlan();
    publishTiers(0, nullptr); // first: the notice's reader sees the status it describes
    if (!dropped.empty()) publish(EngineEvent::make(EventKind::Notice, m_loadId, dropped));
}

void EngineWorker::publishTiers(int tokens, const tiers::TierTelemetry* after) {
    tiers::ExpertCache* cache = m_model ? m_model->model().expertCache() : nullptr;
    TierStatus& st = m_tierState;
    ++st.serial;
    st.streaming = cache != nullptr;
    if (cache) {
        tiers::TierTelemetry t = after ? *after : cache->telemetry();
        if (tokens > 0) {
            st.last = t.counters - st.counters;
            if (m_decoding) {
                st.lastDecode = st.last;
                st.decodeCounters = st.decodeCounters + st.last;
            }
        }
        st.counters = t.counters;
        st.residency = t.residency;
        st.experts = std::move(t.experts); // ~5 bytes per expert, latest-wins with the rest
        st.pinCapacity = cache->pinCapacity();
        st.prefetch = cache->prefetchEnabled();
        st.mirror = std::move(t.mirror);
    }
    st.busySeconds = m_busyBefore + (m_inGenerate ? secondsSince(m_generateStart) : 0.0);
    m_tiers.publish(st);
    // The mirror switched off during the run (a read error, the folder gone): one notice.
    if (st.mirror.fellBack && !m_mirrorNoticed) {
        m_mirrorNoticed = true;
        publish(EngineEvent::make(EventKind::Notice, m_loadId, st.mirror.problem));
    }
}

void EngineWorker::updatePlan() {
    m_tierState.plan = m_model ? computePlanFigures(m_model->model(), m_planRates) : PlanFigures{};
}

void EngineWorker::doLoad(const Command& c) {
    if (m_model && m_model->model().expertCache())
        m_model->model().expertCache()->setTokenObserver(nullptr);
    closeSessionKv();  // its key names the model being replaced
    m_session.reset(); // references the model: drop it first
    m_model.reset();
    const uint64_t serial = m_tierState.serial;
    m_tierState = TierStatus{};
    m_tierState.serial = serial; // keeps growing: the GUI never mistakes a new status for seen
    m_tierState.loadId = c.id;
    m_busyBefore = 0;
    m_learning = false;
    m_generatedSinceLoad = false;
    m_mirrorNoticed = false;
    publishTiers(0, nullptr); // no tiers until the next model is in
    ModelLoadOptions mo;
    mo.threads = c.load.threads > 0 ? c.load.threads : m_opt.threads;
    // The setting: the engine's rule (docs/tiers.md "Buffered or O_DIRECT") chooses per file,
    // or O_DIRECT always (refusing a file system without it), or buffered always.
    mo.tiers.directIo = c.load.readMode;
    mo.tiers.prefetch = c.load.prefetch;
    mo.tiers.mirrorDir = c.load.mirrorDir; // disk weights measured at load
    mo.tiers.gpu = c.load.gpu.empty() ? "none" : c.load.gpu;
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
    m_loadedDir = c.dir;
    m_loadId = c.id;
    m_model = std::move(lm.value());
    // The Settings' VRAM budget (the Tiers view's last one), before any expert enters VRAM and
    // before the RAM budget, which counts the tier's bytes on a device sharing the system's
    // memory; a value the device refuses keeps the default, and the load notice says why.
    std::string vramNote;
    if (c.load.vramBudgetBytes > 0 && m_model->model().gpuActive()) {
        const uint64_t defaultBytes = m_model->model().vramBudget();
        if (const Status st = setVramBudget(c.load.vramBudgetBytes); st.isOk())
            vramNote =
                "VRAM budget from the settings: " + formatBytes(m_model->model().vramBudget()) +
                " (" + std::to_string(m_model->model().gpuCounters().capacity) + " experts).";
        else
            vramNote = "The VRAM budget from the settings (" + formatBytes(c.load.vramBudgetBytes) +
                       ") was not applied; the default " + formatBytes(defaultBytes) +
                       " stays: " + st.message();
    }
    std::string budget;
    std::string budgetWarning; // the cgroup files could not be read
    if (tiers::ExpertCache* cache = m_model->model().expertCache()) {
        const uint64_t most = maximumExpertBudget(*cache);
        // The Settings view's budget (this load's), else the worker's, else the default from
        // available memory (the memory cgroup's room too: a container's limit, not the host's).
        const uint64_t want =
            c.load.ramBudgetBytes > 0 ? c.load.ramBudgetBytes : m_opt.expertBudgetBytes;
        // Within [minimum, most]: setBudget cannot fail.
        (void)cache->setBudget(chooseExpertBudget(*cache, want, &budgetWarning));
        cache->setPrefetch(m_opt.prefetch && c.load.prefetch);
        budget = formatBytes(cache->budget());
        m_tierState.minimumBudget = cache->minimumBudget();
        m_tierState.maximumBudget = most;
        m_tierState.directIo = cache->pool().directIo();
        m_tierState.readMode = cache->pool().readModeText();
        m_tierState.backend = aio::ioBackendName(cache->pool().backend());
        m_tierState.expertReadBytes = cache->source().readBytes();
        m_tierState.source = cache->source().describe();
        // Runs on this thread after every forward step, outside OpenMP and the cache's lock:
        // the one place between two tokens of an answer (budget changes land here).
        cache->setTokenObserver([this](int tokens, const tiers::TierTelemetry& after) {
            publishTiers(tokens, &after);
            applyPendingSettings();
        });
    }
    m_session = std::make_unique<Session>(*m_model);
    m_kvWeights = m_model->model().weightsDescription();
    if (m_model->model().expertCache()) {
        // The plan's rates: once per load, here on the engine thread (about a second).
        m_planRates = measurePlanRates(c.dir);
        updatePlan();
    }
    applyPendingSettings(); // a budget asked for while loading
    publishTiers(0, nullptr);
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
    ev.summary = sum;
    ev.architecture = m_model->model().config().architecture;
    ev.layers = m_model->model().config().nLayers;
    ev.topK = m_model->model().config().topK;
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
    if (!budgetWarning.empty()) warnings += (warnings.empty() ? "" : "\n") + budgetWarning;
    // The VRAM tier's device and budget, or why a GPU that was asked for computes nothing (empty
    // for "none"): a user who chose a GPU learns whether it is used.
    if (const std::string gpu = m_model->model().gpuNote(); !gpu.empty())
        warnings += (warnings.empty() ? "" : "\n") + gpu;
    if (!vramNote.empty()) warnings += (warnings.empty() ? "" : "\n") + vramNote;
    if (!warnings.empty()) publish(EngineEvent::make(EventKind::Notice, c.id, warnings));
}

void EngineWorker::doApplyUsage(const Command& c) {
    tiers::ExpertCache* cache = m_model ? m_model->model().expertCache() : nullptr;
    // The usage belongs to the folder it was read for (another model may be loaded by now).
    if (!cache || !c.usage || c.dir != m_loadedDir) return;
    // It may arrive after the first answers (hashing a large checkpoint takes a while): its clock
    // then must not go back behind the tokens already counted; the stored heat records replace
    // those few tokens' heat of the same experts. Placement only: no token changes either way.
    learning::LearnedUsage usage = *c.usage;
    if (m_generatedSinceLoad) usage.tokenClock = std::max(usage.tokenClock, cache->tokenClock());
    // User pins and exclusions set in this load before the stored ones arrived stay (their
    // storage writes were queued after the read).
    for (const tiers::ExpertId& id : cache->userPins())
        if (std::find(usage.userPins.begin(), usage.userPins.end(), id) == usage.userPins.end())
            usage.userPins.push_back(id);
    for (const tiers::ExpertId& id : cache->exclusions())
        if (std::find(usage.exclusions.begin(), usage.exclusions.end(), id) ==
            usage.exclusions.end())
            usage.exclusions.push_back(id);
    // With a GPU tier the hottest go to VRAM, the next hottest to the RAM hot-store. Only before
    // the first answer: VRAM pins placed later could replace experts the cache shows in VRAM.
    std::vector<tiers::ExpertId> vramPins;
    if (!m_generatedSinceLoad)
        vramPins = m_model->model().setVramPins(learning::vramPinCandidates(usage));
    const int applied = learning::applyLearnedUsage(*cache, usage, vramPins);
    m_learning = true;
    updatePlan(); // the learned heat gives the expected hit rate
    publishTiers(0, nullptr);
    if (applied < int(usage.userPins.size()))
        publish(EngineEvent::make(EventKind::Notice, m_loadId,
                                  userPinsLeftOut(usage.userPins.size() - size_t(applied),
                                                  usage.userPins.size(), cache->pinCapacity())));
}

void EngineWorker::doUserPin(const Command& c) {
    EngineEvent ev = EngineEvent::make(EventKind::UserPin, c.id, {});
    ev.pin = c.pin;
    tiers::ExpertCache* cache = m_model ? m_model->model().expertCache() : nullptr;
    if (!cache) {
        ev.text = "no model with streamed experts is loaded: nothing to pin";
        return publish(std::move(ev));
    }
    const tiers::ExpertId id{c.pin.layer, c.pin.expert};
    using Action = UserPinChange::Action;
    switch (c.pin.action) {
    case Action::Pin: {
        const Status st = cache->pinUser(id);
        ev.pinApplied = st.isOk();
        ev.text = st.isOk() ? userPinMessage(c.pin) : st.message();
        break;
    }
    case Action::Unpin:
        cache->unpinUser(id); // false: no longer one (e.g. a smaller budget dropped it): done
        ev.pinApplied = true;
        ev.text = userPinMessage(c.pin);
        break;
    case Action::Exclude:
        // Ignored only for a bad id; a learned pin that a rebalance already dropped is excluded
        // all the same.
        cache->exclude(id);
        {
            const std::vector<tiers::ExpertId> ex = cache->exclusions();
            ev.pinApplied = std::find(ex.begin(), ex.end(), id) != ex.end();
        }
        ev.text = ev.pinApplied ? userPinMessage(c.pin)
                                : "layer " + std::to_string(id.layer) + " expert " +
                                      std::to_string(id.expert) + " is not a routed expert";
        break;
    case Action::ResetExclusions:
        cache->setExclusions({});
        ev.pinApplied = true;
        ev.text = userPinMessage(c.pin);
        break;
    }
    publishTiers(0, nullptr);
    publish(std::move(ev));
}

void EngineWorker::doGenerate(const Command& c) {
    if (!m_opt.replayFile.empty()) return doReplay(c);
    const auto t0 = Clock::now();
    m_generatedSinceLoad = true;
    m_inGenerate = true;
    m_generateStart = t0;
    struct BusyEnd { // the time spent generating counts however the turn ends
        EngineWorker* w;
        ~BusyEnd() {
            w->m_busyBefore += secondsSince(w->m_generateStart);
            w->m_inGenerate = false;
            w->publishTiers(0, nullptr);
        }
    } busyEnd{this};
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
    std::vector<int32_t> ids = fitted.value().ids;
    if (!c.continueText.empty()) { // "Continue": the model goes on from the answer so far
        const std::vector<int32_t> more = m_model->tokenizer().encode(c.continueText, false);
        ids.insert(ids.end(), more.begin(), more.end());
    }
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
    // The chat's stored conversation, when the Session does not hold it yet (a restart, another
    // chat shown): the prompt's common prefix with it is not run again.
    openSessionKv(c);
    m_decoding = false; // the prompt's steps first: publishTiers counts them as prefill
    params.onPrefillDone = [this] { m_decoding = true; };
    m_kvDirty = true; // whatever the outcome, the Session's conversation changed
    auto stats = m_session->generate(ids, params, onPiece, c.cancel.get());
    m_decoding = false;
    if (!stats.isOk()) {
        return fail(stats.status().message());
    }
    snap.generating = false;
    snap.elapsedSeconds = secondsSince(t0);
    snap.tokensPerSecond = stats.value().decodeTokensPerSecond;
    m_telemetry.publish(snap);
    if (stats.value().decodeTokensPerSecond > 0)
        m_tierState.lastDecodeTokensPerSecond = stats.value().decodeTokensPerSecond;
    updatePlan(); // this answer's routings are learned heat now (published by BusyEnd)
    EngineEvent done = EngineEvent::make(EventKind::Finished, c.id, {});
    done.stats = std::move(stats.value());
    done.droppedMessages = fitted.value().droppedMessages;
    done.contextLength = fitted.value().contextTokens;
    tiers::ExpertCache* cache = m_model->model().expertCache();
    if (m_learning && cache) // pins rebalanced between turns; heat and pins go to the database
        done.usage = std::make_shared<learning::UsageSnapshot>(
            learning::endTurnSnapshot(*cache, m_model->model().vramPins()));
    publish(std::move(done));
}

} // namespace coli::app

namespace coli::app {

void EngineWorker::doReplay(const Command& c) {
    const auto t0 = Clock::now();
    TelemetrySnapshot snap;
    snap.id = c.id;
    snap.generating = true;
    m_telemetry.publish(snap);
    auto recording = readTokenReplay(m_opt.replayFile);
    if (!recording.isOk()) {
        snap.generating = false;
        m_telemetry.publish(snap);
        return publish(EngineEvent::make(EventKind::Failed, c.id, recording.status().message()));
    }
    auto cancelled = [&] { return c.cancel->load(std::memory_order_relaxed); };
    GenerateStats stats;
    stats.stopReason = StopReason::Eos; // the recording's end stands for the model's EOS
    Clock::time_point due = t0, first{};
    for (const ReplayPiece& p : recording.value()) {
        if (stats.generatedTokens >= c.params.maxNewTokens) {
            stats.stopReason = StopReason::MaxTokens;
            break;
        }
        if (m_opt.replaySpeed > 0) {
            // Wait for the piece's recorded time (absolute, so sleep overshoot does not add up),
            // in short slices so that Stop is as prompt as between real tokens.
            due += std::chrono::microseconds(int64_t(double(p.delayMicros) / m_opt.replaySpeed));
            for (auto now = Clock::now(); now < due && !cancelled(); now = Clock::now())
                std::this_thread::sleep_for(
                    std::min<Clock::duration>(due - now, std::chrono::milliseconds(20)));
        }
        if (cancelled()) {
            stats.stopReason = StopReason::Cancelled;
            break;
        }
        if (stats.generatedTokens == 0) first = Clock::now();
        ++stats.generatedTokens;
        snap.generatedTokens = stats.generatedTokens;
        snap.elapsedSeconds = secondsSince(t0);
        const double dt = secondsSince(first);
        snap.tokensPerSecond = dt > 0 ? (snap.generatedTokens - 1) / dt : 0;
        m_telemetry.publish(snap);
        publish(EngineEvent::make(EventKind::Piece, c.id, p.text));
    }
    if (stats.generatedTokens > 0) {
        stats.ttftSeconds = std::chrono::duration<double>(first - t0).count();
        stats.decodeSeconds = secondsSince(first);
        if (stats.decodeSeconds > 0)
            stats.decodeTokensPerSecond = (stats.generatedTokens - 1) / stats.decodeSeconds;
    }
    snap.generating = false;
    snap.elapsedSeconds = secondsSince(t0);
    snap.tokensPerSecond = stats.decodeTokensPerSecond;
    m_telemetry.publish(snap);
    EngineEvent done = EngineEvent::make(EventKind::Finished, c.id, {});
    done.stats = std::move(stats);
    publish(std::move(done));
}

} // namespace coli::app

namespace coli::app {

void EngineWorker::doTopicProbe(const Command& c) {
    auto fail = [&](const std::string& msg, bool cancelled) {
        EngineEvent ev = EngineEvent::make(EventKind::ProbeFailed, c.id, msg);
        ev.cancelled = cancelled;
        publish(std::move(ev));
    };
    if (c.cancel->load(std::memory_order_relaxed))
        return fail("the topic probe was cancelled", true);
    if (!m_model) return fail("no model loaded: open a model folder first", false);
    if (c.dir != m_loadedDir) // another model was opened since it was asked for
        return fail("the topic probe was asked for " + c.dir + ", but " + m_loadedDir +
                        " is loaded now",
                    false);
    auto set = probe::loadTopicSet(c.topicsFile);
    if (!set) return fail(set.status().message(), false);
    // Progress: at most about one event per percent (the ring is lossless; chunks are many).
    int64_t published = -1;
    auto progress = [&](const probe::ProbeProgress& p) {
        const int64_t step = std::max<int64_t>(1, p.tokensTotal / 100);
        if (published >= 0 && p.tokensDone < p.tokensTotal && p.tokensDone - published < step)
            return;
        published = p.tokensDone;
        EngineEvent ev = EngineEvent::make(EventKind::ProbeProgress, c.id, {});
        ev.tokensDone = p.tokensDone;
        ev.tokensTotal = p.tokensTotal;
        publish(std::move(ev));
    };
    // Its own KV cache: the conversation's (the Session's) is untouched, and the expert cache
    // learns nothing from it (runTopicProbe pauses learned heat).
    auto r = probe::runTopicProbe(*m_model, *set, c.probeOptions, progress, c.cancel.get());
    if (!r) return fail(r.status().message(), r.status().code() == ErrorCode::Cancelled);
    auto a = atlas::analyseProbe(*r);
    if (!a) return fail(a.status().message(), false);
    auto out = std::make_shared<ProbeOutcome>();
    out->modelDir = c.dir;
    out->topicsFile = c.topicsFile;
    out->probe = atlas::toStoredProbe(*r, *a);
    // The run's time, kept when it is saved (the Atlas shows the same row before and after).
    out->probe.createdMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    out->figures = std::move(a.value());
    EngineEvent ev = EngineEvent::make(EventKind::ProbeFinished, c.id, {});
    ev.probe = std::move(out);
    publish(std::move(ev));
}

} // namespace coli::app

namespace coli::app {

// Persisted chats: runtime/session_kv_file.h holds one chat's KV cache crash-safe; these keep
// the Session and the file of the chat shown in step (docs/app.md "Sessions").

void EngineWorker::closeSessionKv() {
    m_kvFile.reset();
    m_kvTarget = {};
}

bool EngineWorker::openKvFile(std::vector<std::string>* warnings, SessionKvState* state) {
    const SessionKvTarget& t = m_kvTarget;
    std::error_code ec;
    std::filesystem::create_directories(t.dir, ec); // open() creates the file, not its folder
    if (ec) {
        warnings->push_back(t.dir + ": cannot create the folder of the chats' KV caches (" +
                            ec.message() +
                            "): this chat's KV cache is not saved; the chat goes on");
        return false;
    }
    const ModelConfig& cfg = m_model->model().config();
    const SessionKvKey key{t.modelIdentity, m_kvWeights, cfg.nLayers, kvShape(cfg)};
    std::vector<std::string> notes;
    auto f = SessionKvFile::open(sessionKvPath(t.dir, t.session), key, state, &notes);
    for (const std::string& n : notes)
        warnings->push_back("The chat's saved KV cache: " + n);
    if (!f) {
        warnings->push_back(f.status().message() +
                            ": this chat's KV cache is not saved; the chat goes on");
        return false;
    }
    m_kvFile = std::move(f.value());
    return true;
}

void EngineWorker::openSessionKv(const Command& c) {
    const SessionKvTarget& t = c.kv;
    if (t.session == 0 || t.dir.empty()) return closeSessionKv(); // not a saved chat
    const bool held = m_kvTarget.session == t.session; // the Session holds this chat's turns
    if (held && m_kvFile) return;
    if (!held) m_kvFile.reset();
    m_kvTarget = t;
    // A chat not created in the database yet (SessionKvBind names it later) or a model whose
    // identity is not known yet: the Session holds the turns, the file comes later.
    if (t.session < 0 || t.modelIdentity.empty()) return;
    std::vector<std::string> warnings;
    SessionKvState state;
    if (openKvFile(&warnings, &state) && !state.tokens.empty() &&
        (!held || m_session->tokens().empty())) {
        // A Session that already holds the chat (turns that ran before the file could be opened)
        // keeps its own conversation: the save after this turn makes the file follow it.
        if (Status st = m_session->restore(state.tokens, state.rows); !st)
            warnings.push_back(m_kvFile->path() + ": not restored (" + st.message() +
                               "): the conversation is read again");
    }
    EngineEvent ev = EngineEvent::make(EventKind::SessionKv, c.id, joinLines(warnings));
    ev.kvSession = t.session;
    ev.kvBytes = m_kvFile ? m_kvFile->fileBytes() : 0;
    publish(std::move(ev));
}

void EngineWorker::saveSessionKv(uint64_t id) {
    m_kvDirty = false;
    if (m_kvFile && m_session) persistKv(id, {});
}

void EngineWorker::persistKv(uint64_t id, std::vector<std::string> warnings) {
    const SessionKvTarget& t = m_kvTarget;
    if (const Status st = m_kvFile->save(m_session->tokens(), m_session->kv()); !st)
        warnings.push_back(
            st.message() +
            ": the chat's KV cache on disk keeps its earlier turns; the chat goes on");
    EngineEvent ev = EngineEvent::make(EventKind::SessionKv, id, {});
    ev.kvSession = t.session;
    ev.kvBytes = m_kvFile->fileBytes();
    // Over the cap, the least recently written files of other chats go (their text stays).
    const uint64_t cap = t.capBytes > 0 ? t.capBytes : defaultSessionKvCap(t.dir);
    if (auto deleted = enforceSessionKvCap(t.dir, cap, t.session))
        ev.kvDeleted = std::move(deleted.value());
    else
        warnings.push_back(deleted.status().message());
    ev.text = joinLines(warnings);
    publish(std::move(ev));
}

void EngineWorker::doSessionKvBind(const Command& c) {
    // Only when the Session still holds that chat (a Reset, another chat or model since: no).
    if (!m_model || !m_session || m_kvTarget.session == 0 || m_kvTarget.session != c.kvFrom ||
        c.kv.session <= 0 || c.kv.dir.empty())
        return;
    if (m_kvFile && m_kvTarget.session == c.kv.session) return; // open already
    m_kvFile.reset();
    m_kvTarget = c.kv;
    if (c.kv.modelIdentity.empty()) return;
    std::vector<std::string> warnings;
    SessionKvState state;
    if (!openKvFile(&warnings, &state)) {
        EngineEvent ev = EngineEvent::make(EventKind::SessionKv, c.id, joinLines(warnings));
        ev.kvSession = c.kv.session;
        return publish(std::move(ev));
    }
    if (m_session->tokens().empty() && !state.tokens.empty())
        (void)m_session->restore(state.tokens, state.rows); // reset on failure: read again
    persistKv(c.id, std::move(warnings));
}

void EngineWorker::doSessionKvDelete(const Command& c) {
    if (c.kv.session <= 0 || c.kv.dir.empty()) return;
    if (m_kvTarget.session == c.kv.session) closeSessionKv();
    const Status st = removeSessionKv(c.kv.dir, c.kv.session);
    EngineEvent ev = EngineEvent::make(EventKind::SessionKv, c.id, st ? "" : st.message());
    ev.kvSession = c.kv.session;
    ev.kvBytes = st ? 0 : sessionKvBytes(c.kv.dir, c.kv.session);
    publish(std::move(ev));
}

} // namespace coli::app
