#include "tiers/expert_cache.h"

#include "core/strings.h"
#include "tiers/slot_arena.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

namespace coli::tiers {

namespace {

enum class SlotState { Empty, Loading, Ready };

struct Slot {
    uint8_t* mem = nullptr; // null: not allocated (counts nothing against the budget)
    SlotState state = SlotState::Empty;
    ExpertId id;
    int refs = 0;            // handed out by next() and not yet finished()
    bool wanted = false;     // needed by the open layer: not evictable until finished
    bool prefetched = false; // loaded by prefetch() and not demanded since
    bool demandRead = false; // the read in flight was started for the open layer (not a prefetch
                             // or a pin): only its failure is the layer's error
};

// What pinned[] holds per expert.
constexpr char kNotPinned = 0, kLearnedPin = 1, kUserPin = 2;

struct Want {
    int expert = 0;
    bool handed = false;
    bool done = false;
    bool issued = false; // a read was started for it (or it was resident)
    bool gpu = false;    // computed on the GPU (beginLayer's onGpu): handed and done from the start
};

} // namespace

struct ExpertCache::Impl {
    // Destruction order: ~ExpertCache drains the reads; then the slots' memory (arena, declared
    // after these two), then the source, then the pool (which the source reads through).
    std::unique_ptr<aio::IoPool> pool;
    std::unique_ptr<ExpertSource> source;
    ModelConfig cfg;
    CacheOptions opt;
    uint64_t slotBytes = 0;
    // Every slot's memory, slot i at index i (slot_arena.h); made in create().
    std::unique_ptr<SlotArena> arena;
    int working = 0;  // working-set slots
    int maxSlots = 0; // budget / slotBytes
    mutable std::mutex mutex;
    std::condition_variable cv;
    std::vector<Slot> slots;
    std::vector<int> slotOf;    // [n_layers * n_experts] -> slot index or -1
    std::vector<char> pinned;   // [n_layers * n_experts] pin targets: kLearnedPin, kUserPin
    std::vector<char> excluded; // [n_layers * n_experts] never a learned pin (user's choice)
    int userPins = 0;           // experts with pinned == kUserPin
    // The Brain view's map (ExpertMap), kept current where slots and pins change (mark()), so a
    // snapshot is a copy, not a walk over the slot table.
    std::vector<uint8_t> stateMap; // [n_layers * n_experts] ExpertState | kUserPinFlag
    std::vector<uint8_t> inVram;   // [n_layers * n_experts] markVram()
    int vramCapacity = 0, vramExperts = 0;
    uint64_t vramExpertBytes = 0;
    // The system RAM the VRAM tier holds (setVramCapacity): it counts in the RAM budget, so the
    // RAM slots get the budget less these.
    uint64_t vramRamBytes = 0;
    std::vector<uint32_t> hits;      // [n_layers * n_experts] routed counts (as counters.routed)
    std::vector<uint32_t> reads;     // [n_layers * n_experts] completed loads (expertReads())
    std::map<size_t, Status> failed; // demanded experts whose read failed (until reported)
    HeatTable heat;    // learned heat (long half-life): pins, saved to the usage database
    HeatTable recent;  // eviction heat (short half-life): the LFRU order of the cache
    bool learn = true; // setLearning: routings and tokens count in `heat`
    TierCounters counters;
    std::vector<std::vector<uint64_t>> routedBits;
    std::vector<std::vector<int>> predicted; // [n_layers] the lookahead's last prediction
    int openLayer = -1;
    // The LFRU order's position in the layer cycle: the open layer, or the next one between
    // layers (HeatTable::colder(a, b, currentLayer, topK)).
    int cycleLayer = 0;
    ExpertCache::TokenObserver observer;
    std::vector<Want> wants;
    int loading = 0;

    Impl(const ModelConfig& c, const CacheOptions& o)
        : cfg(c), opt(o), heat(c.nLayers, c.nExperts, o.halfLifeTokens),
          recent(c.nLayers, c.nExperts, o.evictionHalfLifeTokens) {}

    size_t key(ExpertId id) const { return size_t(id.layer) * cfg.nExperts + id.expert; }
    int allocated() const {
        int n = 0;
        for (const Slot& s : slots)
            n += s.mem ? 1 : 0;
        return n;
    }
    bool evictable(const Slot& s) const {
        return s.mem && s.state == SlotState::Ready && s.refs == 0 && !s.wanted &&
               !pinned[key(s.id)];
    }
    // The eviction order (docs/perf-cache-policy.md): the expected time to the next routing, from
    // the eviction heat's share of its layer and the distance to the layer in the layer cycle.
    bool colder(ExpertId a, ExpertId b) const { return recent.colder(a, b, cycleLayer, cfg.topK); }
    int pinCapacity() const { return std::max(0, int(double(maxSlots - working) * opt.pinShare)); }
    ExpertId idOf(size_t k) const { return {int(k / cfg.nExperts), int(k % cfg.nExperts)}; }
    bool routedExpert(ExpertId id) const {
        return id.layer >= 0 && id.layer < cfg.nLayers && id.expert >= 0 &&
               id.expert < cfg.nExperts && cfg.sparseLayer[size_t(id.layer)];
    }

    // The ExpertMap byte of expert k, from the slot table and the pins.
    uint8_t stateFromSlots(size_t k) const {
        if (!cfg.sparseLayer[k / size_t(cfg.nExperts)]) return uint8_t(ExpertState::None);
        ExpertState st = ExpertState::Disk;
        if (inVram[k])
            st = ExpertState::Vram;
        else if (const int s = slotOf[k]; s >= 0)
            st = pinned[k]                                      ? ExpertState::Pinned
                 : slots[size_t(s)].state == SlotState::Loading ? ExpertState::Loading
                                                                : ExpertState::Cached;
        return uint8_t(uint8_t(st) | (pinned[k] == kUserPin ? kUserPinFlag : 0));
    }
    void mark(size_t k) { stateMap[k] = stateFromSlots(k); }
    void setPinned(size_t k, char how) {
        userPins += (how == kUserPin) - (pinned[k] == kUserPin);
        pinned[k] = how;
        mark(k);
    }
    int pinCount() const {
        int n = 0;
        for (char p : pinned)
            n += p != kNotPinned;
        return n;
    }
    // The coldest learned pin by learned heat; -1 when there is none.
    long coldestLearnedPin() const {
        long out = -1;
        for (size_t k = 0; k < pinned.size(); ++k)
            if (pinned[k] == kLearnedPin && (out < 0 || heat.colder(idOf(k), idOf(size_t(out)))))
                out = long(k);
        return out;
    }
    std::vector<ExpertId> pinnedIds() const {
        std::vector<ExpertId> out;
        for (size_t k = 0; k < pinned.size(); ++k)
            if (pinned[k]) out.push_back(idOf(k));
        return out;
    }

    // The LFRU victim among the evictable slots; -1 when every slot is busy, pinned or empty.
    int coldestEvictable() const {
        int victim = -1;
        for (size_t i = 0; i < slots.size(); ++i)
            if (evictable(slots[i]) &&
                (victim < 0 || colder(slots[i].id, slots[size_t(victim)].id)))
                victim = int(i);
        return victim;
    }
    // Drops a ready slot's expert (its memory stays allocated).
    void evict(Slot& v) {
        slotOf[key(v.id)] = -1;
        v.state = SlotState::Empty;
        v.prefetched = false;
        ++counters.evictions;
        mark(key(v.id));
    }

    // A slot for a new read: an allocated empty one, a new allocation within the budget, or the
    // LFRU victim (for a prefetch only if colder than `target`). -1 when none.
    int takeSlot(bool forPrefetch, ExpertId target) {
        int unallocated = -1;
        for (size_t i = 0; i < slots.size(); ++i) {
            if (slots[i].mem && slots[i].state == SlotState::Empty) return int(i);
            if (!slots[i].mem && unallocated < 0) unallocated = int(i);
        }
        if (allocated() < maxSlots) {
            const size_t i = unallocated >= 0 ? size_t(unallocated) : slots.size();
            if (uint8_t* p = arena->take(i)) {
                if (unallocated < 0) slots.emplace_back();
                slots[i].mem = p;
                slots[i].state = SlotState::Empty;
                return int(i);
            }
        }
        const int victim = coldestEvictable();
        if (victim < 0) return -1;
        Slot& v = slots[size_t(victim)];
        // A prefetch may displace an expert colder than the one it wants, or one of an earlier
        // layer (already computed for this batch: not needed before the next batch, while the
        // lookahead's expert is needed one layer from now).
        if (forPrefetch && !colder(v.id, target) && v.id.layer >= target.layer) return -1;
        evict(v);
        return victim;
    }

    // What a read needs, taken under the lock: submit() runs without it, while another thread may
    // change the slot table (reads of `slots` there would race with takeSlot and trim).
    struct Load {
        int slot;
        ExpertId id;
        uint8_t* mem; // the slot's memory: stays mapped while the slot is loading
    };
    void markLoading(int s, ExpertId id, bool prefetched, std::vector<Load>& out) {
        Slot& sl = slots[size_t(s)];
        sl.state = SlotState::Loading;
        sl.id = id;
        sl.refs = 0;
        sl.wanted = false;
        sl.prefetched = prefetched;
        sl.demandRead = false;
        slotOf[key(id)] = s;
        mark(key(id));
        ++loading;
        ++counters.readsIssued;
        out.push_back({s, id, sl.mem});
        // A prefetch or pin of an expert the open layer still waits for is that layer's read:
        // protect it now, or the layer's own reads could evict it before it is used.
        if (id.layer == openLayer)
            for (Want& w : wants)
                if (w.expert == id.expert && !w.issued) {
                    w.issued = true;
                    sl.wanted = true;
                    sl.prefetched = false;
                }
    }

    // Starts reads for wanted experts not yet issued, in order, while slots allow.
    void issueWants(std::vector<Load>& out) {
        for (Want& w : wants) {
            if (w.issued) continue;
            const ExpertId id{openLayer, w.expert};
            // A prefetch or a pin may have started reading it since beginLayer: share that read.
            if (const int held = slotOf[key(id)]; held >= 0) {
                Slot& sl = slots[size_t(held)];
                sl.wanted = true;
                sl.prefetched = false;
                w.issued = true;
                continue;
            }
            const int s = takeSlot(false, id);
            if (s < 0) return;
            markLoading(s, id, false, out); // marks the want issued and the slot wanted
            slots[size_t(s)].demandRead = true;
        }
    }

    // Starts reading a pinned expert that is not resident, if a slot can be had.
    void loadPinned(ExpertId id, std::vector<Load>& out) {
        if (slotOf[key(id)] >= 0) return;
        const int s = takeSlot(false, id);
        if (s >= 0) markLoading(s, id, false, out);
    }

    // Frees slot memory beyond the budget: empty slots first, then the coldest evictable.
    void trim() {
        int n = allocated();
        for (size_t i = 0; i < slots.size(); ++i)
            if (n > maxSlots && slots[i].mem && slots[i].state == SlotState::Empty) {
                arena->release(i);
                slots[i].mem = nullptr;
                --n;
            }
        while (n > maxSlots) {
            const int victim = coldestEvictable();
            if (victim < 0) return; // busy slots: freed when released
            Slot& v = slots[size_t(victim)];
            evict(v);
            arena->release(size_t(victim));
            v = Slot{};
            --n;
        }
    }

    // The slot holding the open layer's wanted expert w when it is ready, else -1 (not read yet,
    // or being read).
    int readySlot(const Want& w) const {
        const int s = slotOf[key({openLayer, w.expert})];
        return s >= 0 && slots[size_t(s)].state == SlotState::Ready ? s : -1;
    }
    // Hands want i, ready in slot s, out: held (referenced) until finished(i); its view in *view.
    void handOut(size_t i, int s, SwiGluView* view) {
        Want& w = wants[i];
        Slot& sl = slots[size_t(s)];
        ++sl.refs;
        w.handed = true;
        *view = source->view({openLayer, w.expert}, sl.mem);
    }

    void closeLayer() {
        for (const Want& w : wants) {
            const int s = slotOf[key({openLayer, w.expert})];
            if (s < 0) continue;
            Slot& sl = slots[size_t(s)];
            if (sl.id != ExpertId{openLayer, w.expert}) continue;
            sl.wanted = false;
            if (w.handed && !w.done && sl.refs > 0) --sl.refs;
        }
        for (const Want& w : wants)
            failed.erase(key({openLayer, w.expert}));
        wants.clear();
        cycleLayer = (openLayer + 1) % cfg.nLayers;
        openLayer = -1;
        trim();
    }

    void onLoaded(int s, ExpertId id, const Status& st, Disk disk) {
        std::lock_guard<std::mutex> lock(mutex);
        Slot& sl = slots[size_t(s)];
        --loading;
        if (st.isOk()) {
            sl.state = SlotState::Ready;
            counters.bytesRead += source->readBytes();
            (disk == Disk::Mirror ? counters.bytesReadMirror : counters.bytesReadPrimary) +=
                source->readBytes();
            ++reads[key(id)];
        } else {
            ++counters.failedReads;
            // A failed prefetch or pin read is read again on demand (next() re-issues wants whose
            // slot vanished); a failed demand read is the layer's error.
            if (sl.wanted && sl.demandRead) failed[key(id)] = st;
            sl.state = SlotState::Empty;
            sl.wanted = false;
            sl.prefetched = false;
            slotOf[key(id)] = -1;
        }
        mark(key(id));
        trim();
        cv.notify_all();
    }

    // Submits reads outside the lock (the pool has its own). Touches nothing of the slot table:
    // a loading slot is neither freed nor reused, so l.mem stays valid until onLoaded.
    void submit(const std::vector<Load>& loads) {
        for (const Load& l : loads)
            source->load(l.id, l.mem, [this, l](const Status& st, Disk disk) {
                onLoaded(l.slot, l.id, st, disk);
            });
    }
};

ExpertCache::~ExpertCache() {
    if (!m) return;
    waitIdle(); // then the arena frees every slot (Impl's destructor)
}

Result<std::unique_ptr<ExpertCache>> ExpertCache::create(std::unique_ptr<aio::IoPool> pool,
                                                         std::unique_ptr<ExpertSource> source,
                                                         const ModelConfig& cfg,
                                                         const CacheOptions& options) {
    std::unique_ptr<ExpertCache> c(new ExpertCache());
    c->m = std::make_unique<Impl>(cfg, options);
    Impl& m = *c->m;
    m.slotBytes = source->slotBytes();
    m.working = workingSlots(cfg.topK, pool->queueDepth());
    m.pool = std::move(pool);
    m.source = std::move(source);
    m.slotOf.assign(size_t(cfg.nLayers) * cfg.nExperts, -1);
    m.pinned.assign(m.slotOf.size(), kNotPinned);
    m.excluded.assign(m.slotOf.size(), 0);
    m.hits.assign(m.slotOf.size(), 0);
    m.reads.assign(m.slotOf.size(), 0);
    m.stateMap.assign(m.slotOf.size(), 0);
    m.inVram.assign(m.slotOf.size(), 0);
    for (size_t k = 0; k < m.stateMap.size(); ++k)
        m.mark(k);
    m.routedBits.assign(size_t(cfg.nLayers), std::vector<uint64_t>(size_t(cfg.nExperts + 63) / 64));
    m.predicted.assign(size_t(cfg.nLayers), {});
    // The slot table never grows past every expert + the working set (setBudget's cap): reserve it
    // so a Slot& taken under the lock is never moved by takeSlot's emplace_back.
    m.slots.reserve(m.slotOf.size() + size_t(m.working));
    m.arena = std::make_unique<SlotArena>(m.slotOf.size() + size_t(m.working), m.slotBytes);
    COLI_RETURN_IF_ERROR(c->setBudget(options.budgetBytes));
    return c;
}

uint64_t ExpertCache::slotBytes() const {
    return m->slotBytes;
}
int ExpertCache::expertsPerLayer() const {
    return m->cfg.nExperts;
}
uint64_t ExpertCache::minimumBudget() const {
    return uint64_t(m->working) * m->slotBytes;
}
uint64_t ExpertCache::vramTierRamBytes() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->vramRamBytes;
}

uint64_t ExpertCache::budget() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return uint64_t(m->maxSlots) * m->slotBytes + m->vramRamBytes;
}

Status ExpertCache::setBudget(uint64_t bytes) {
    const uint64_t minimum = minimumBudget();
    if (bytes != 0 && bytes < minimum)
        return {ErrorCode::InvalidArgument,
                "RAM budget " + std::to_string(bytes) + " bytes (" + mibString(bytes) +
                    ") is below the minimum working set of " + std::to_string(minimum) +
                    " bytes (" + mibString(minimum) + ": " + std::to_string(m->working) +
                    " expert slots = top-k + I/O queue depth, " + std::to_string(m->slotBytes) +
                    " bytes each); use 0 for the minimum"};
    std::lock_guard<std::mutex> lock(m->mutex);
    const uint64_t total = uint64_t(m->cfg.nLayers) * m->cfg.nExperts;
    const uint64_t ramBytes = bytes > m->vramRamBytes ? bytes - m->vramRamBytes : 0;
    const uint64_t slots = bytes == 0
                               ? uint64_t(m->working)
                               : std::max<uint64_t>(uint64_t(m->working), ramBytes / m->slotBytes);
    // More slots than experts (+ the working set) would never be used.
    m->maxSlots = int(std::min<uint64_t>(slots, total + uint64_t(m->working)));
    m->opt.budgetBytes = bytes;
    // Unpin the coldest pins beyond the new hot-store size: learned pins first, user pins only
    // when they alone exceed it (docs/tiers.md "User pins").
    std::vector<ExpertId> pins = m->pinnedIds();
    std::stable_sort(pins.begin(), pins.end(), [&](ExpertId a, ExpertId b) {
        const bool ua = m->pinned[m->key(a)] == kUserPin, ub = m->pinned[m->key(b)] == kUserPin;
        return ua != ub ? ub : m->heat.colder(a, b);
    });
    for (size_t i = 0; int(pins.size() - i) > m->pinCapacity(); ++i)
        m->setPinned(m->key(pins[i]), kNotPinned);
    m->trim();
    return {};
}

void ExpertCache::setPrefetch(bool on) {
    std::lock_guard<std::mutex> lock(m->mutex);
    m->opt.prefetch = on;
}
bool ExpertCache::prefetchEnabled() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->opt.prefetch;
}

Status ExpertCache::beginLayer(int layer, std::span<const int> experts, std::span<const int> counts,
                               std::span<const uint8_t> onGpu) {
    std::vector<Impl::Load> loads;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (m->openLayer >= 0)
            return {ErrorCode::InvalidArgument,
                    "expert cache: layer " + std::to_string(m->openLayer) + " is still open"};
        if ((!counts.empty() && counts.size() != experts.size()) ||
            (!onGpu.empty() && onGpu.size() != experts.size()))
            return {ErrorCode::InvalidArgument,
                    "expert cache: counts or onGpu and experts differ in size"};
        if (layer < 0 || layer >= m->cfg.nLayers || !m->cfg.sparseLayer[size_t(layer)])
            return {ErrorCode::InvalidArgument,
                    "expert cache: layer " + std::to_string(layer) + " has no routed experts"};
        for (int e : experts)
            if (e < 0 || e >= m->cfg.nExperts)
                return {ErrorCode::InvalidArgument,
                        "expert cache: expert " + std::to_string(e) + " out of range"};
        m->openLayer = layer;
        m->cycleLayer = layer;
        m->wants.clear();
        std::vector<uint64_t>& bits = m->routedBits[size_t(layer)];
        std::fill(bits.begin(), bits.end(), 0);
        std::vector<int>& pred = m->predicted[size_t(layer)];
        const bool hadLookahead = !pred.empty();
        for (size_t i = 0; i < experts.size(); ++i) {
            const int e = experts[i];
            const ExpertId id{layer, e};
            bits[size_t(e) / 64] |= uint64_t(1) << (e % 64);
            // Heat counts routings (tokens of the batch that chose the expert), not accesses:
            // the same in decode, closer to the usage database's counts in prefill.
            const int uses = counts.empty() ? 1 : std::max(1, counts[i]);
            for (int u = 0; u < uses; ++u) {
                if (m->learn) m->heat.use(id);
                m->recent.use(id);
            }
            ++m->counters.routed;
            ++m->hits[m->key(id)];
            if (hadLookahead) {
                ++m->counters.lookaheadRouted;
                if (std::find(pred.begin(), pred.end(), e) != pred.end())
                    ++m->counters.lookaheadRecalled;
            }
            Want w;
            w.expert = e;
            const int s = m->slotOf[m->key(id)];
            if (!onGpu.empty() && onGpu[i]) {
                ++m->counters.hitsVram;
                w.gpu = w.handed = w.done = w.issued = true;
            } else if (s >= 0) {
                Slot& sl = m->slots[size_t(s)];
                sl.wanted = true;
                w.issued = true;
                if (m->pinned[m->key(id)] && sl.state == SlotState::Ready)
                    ++m->counters.hitsPinned;
                else
                    ++m->counters.hitsCache;
                if (sl.state == SlotState::Loading) ++m->counters.inFlightHits;
                if (sl.prefetched) {
                    ++m->counters.prefetchUsed;
                    sl.prefetched = false;
                }
            } else {
                ++m->counters.misses;
            }
            m->wants.push_back(w);
        }
        if (hadLookahead) {
            for (int e : pred)
                if (std::find(experts.begin(), experts.end(), e) != experts.end())
                    ++m->counters.prefetchCorrect;
            pred.clear();
        }
        m->issueWants(loads);
    }
    m->submit(loads);
    return {};
}

Result<int> ExpertCache::next(SwiGluView* view) {
    std::unique_lock<std::mutex> lock(m->mutex);
    if (m->openLayer < 0) return -1;
    for (;;) {
        std::vector<Impl::Load> loads;
        m->issueWants(loads);
        if (!loads.empty()) {
            lock.unlock();
            m->submit(loads);
            lock.lock();
        }
        bool pending = false;
        for (size_t i = 0; i < m->wants.size(); ++i) {
            Want& w = m->wants[i];
            if (w.handed) continue;
            const ExpertId id{m->openLayer, w.expert};
            auto f = m->failed.find(m->key(id));
            if (f != m->failed.end()) {
                Status err = f->second;
                m->closeLayer();
                return err;
            }
            if (const int s = m->readySlot(w); s >= 0) {
                m->handOut(i, s, view);
                return int(i);
            }
            pending = true;
        }
        if (!pending) {
            m->closeLayer();
            return -1;
        }
        // A wanted read whose slot vanished without a failure would hang: re-issue it.
        for (Want& w : m->wants)
            if (!w.handed && w.issued && m->slotOf[m->key({m->openLayer, w.expert})] < 0 &&
                !m->failed.count(m->key({m->openLayer, w.expert})))
                w.issued = false;
        const auto t0 = std::chrono::steady_clock::now();
        m->cv.wait_for(lock, std::chrono::milliseconds(50));
        m->counters.ioWaitSeconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
}

int ExpertCache::tryNext(SwiGluView* view) {
    std::vector<Impl::Load> loads;
    int found = -1;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (m->openLayer < 0) return -1;
        m->issueWants(loads);
        for (size_t i = 0; i < m->wants.size() && found < 0; ++i) {
            if (m->wants[i].handed) continue;
            if (const int s = m->readySlot(m->wants[i]); s >= 0) {
                m->handOut(i, s, view);
                found = int(i);
            }
        }
    }
    m->submit(loads);
    return found;
}

bool ExpertCache::openLayerReady() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->openLayer < 0) return false;
    return std::all_of(m->wants.begin(), m->wants.end(),
                       [&](const Want& w) { return w.handed || m->readySlot(w) >= 0; });
}

void ExpertCache::wantOnCpu(int position) {
    std::vector<Impl::Load> loads;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (m->openLayer < 0 || position < 0 || position >= int(m->wants.size())) return;
        Want& w = m->wants[size_t(position)];
        if (!w.gpu) return;
        const int expert = w.expert;
        w = Want{}; // an ordinary want now: read (or found) and handed out by next()
        w.expert = expert;
        m->issueWants(loads);
    }
    m->submit(loads);
}

void ExpertCache::setVramCapacity(int experts, uint64_t bytesPerExpert, uint64_t ramBytes) {
    uint64_t budget = 0;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        m->vramCapacity = experts;
        m->vramExpertBytes = bytesPerExpert;
        m->vramRamBytes = ramBytes;
        budget = m->opt.budgetBytes;
    }
    (void)setBudget(budget); // the RAM slots shrink or grow by the shared bytes
}

void ExpertCache::markVram(ExpertId id, ExpertId evicted) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->routedExpert(evicted) && m->inVram[m->key(evicted)]) {
        const size_t k = m->key(evicted);
        m->inVram[k] = 0;
        --m->vramExperts;
        m->mark(k);
    }
    if (!m->routedExpert(id)) return;
    const size_t k = m->key(id);
    if (m->inVram[k]) return;
    m->inVram[k] = 1;
    ++m->vramExperts;
    m->mark(k);
}

void ExpertCache::finished(int position) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->openLayer < 0 || position < 0 || position >= int(m->wants.size())) return;
    Want& w = m->wants[size_t(position)];
    if (!w.handed || w.done) return;
    w.done = true;
    const int s = m->slotOf[m->key({m->openLayer, w.expert})];
    if (s >= 0) {
        Slot& sl = m->slots[size_t(s)];
        if (sl.refs > 0) --sl.refs;
        sl.wanted = false;
    }
    m->trim();
}

void ExpertCache::abortLayer() {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->openLayer >= 0) m->closeLayer();
}

void ExpertCache::prefetch(int layer, std::span<const int> experts) {
    std::vector<Impl::Load> loads;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (!m->opt.prefetch || layer < 0 || layer >= m->cfg.nLayers ||
            !m->cfg.sparseLayer[size_t(layer)])
            return;
        std::vector<int>& pred = m->predicted[size_t(layer)];
        pred.assign(experts.begin(), experts.end());
        for (int e : experts) {
            if (e < 0 || e >= m->cfg.nExperts) continue;
            ++m->counters.prefetchPredicted;
            const ExpertId id{layer, e};
            if (m->slotOf[m->key(id)] >= 0) continue;
            const int s = m->takeSlot(true, id);
            if (s < 0) continue;
            m->markLoading(s, id, true, loads);
            ++m->counters.prefetchIssued;
        }
    }
    m->submit(loads);
}

void ExpertCache::endTokens(int n) {
    TokenObserver observer;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (m->learn) m->heat.advance(n);
        m->recent.advance(n);
        m->counters.tokens += uint64_t(n);
        observer = m->observer;
    }
    if (observer) observer(n, telemetry());
}

void ExpertCache::setTokenObserver(TokenObserver fn) {
    std::lock_guard<std::mutex> lock(m->mutex);
    m->observer = std::move(fn);
}

void ExpertCache::setLearning(bool on) {
    std::lock_guard<std::mutex> lock(m->mutex);
    m->learn = on;
}

bool ExpertCache::learning() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->learn;
}

int ExpertCache::pinCapacity() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->pinCapacity();
}

void ExpertCache::setPins(const std::vector<ExpertId>& hottestFirst) {
    std::vector<Impl::Load> loads;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        for (size_t k = 0; k < m->pinned.size(); ++k)
            if (m->pinned[k] == kLearnedPin) m->setPinned(k, kNotPinned);
        const int cap = m->pinCapacity() - m->userPins; // user pins keep their places
        int n = 0;
        for (const ExpertId& id : hottestFirst) {
            if (n >= cap) break;
            if (!m->routedExpert(id) || m->pinned[m->key(id)] || m->excluded[m->key(id)] ||
                m->inVram[m->key(id)])
                continue;
            m->setPinned(m->key(id), kLearnedPin);
            ++n;
        }
        for (const ExpertId& id : hottestFirst) {
            if (!m->routedExpert(id) || !m->pinned[m->key(id)] || m->slotOf[m->key(id)] >= 0)
                continue;
            const int s = m->takeSlot(false, id);
            if (s < 0) break;
            m->markLoading(s, id, false, loads);
        }
        // Unpinned slots are evictable now: slots held over the budget by their pins go at once.
        m->trim();
    }
    m->submit(loads);
}

int ExpertCache::rebalancePins() {
    std::vector<Impl::Load> loads;
    int changes = 0;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        // User pins keep their places; excluded experts are never candidates.
        const int cap = m->pinCapacity() - m->userPins;
        std::vector<ExpertId> pinnedIds, free;
        for (int l = 0; l < m->cfg.nLayers; ++l) {
            if (!m->cfg.sparseLayer[size_t(l)]) continue;
            for (int e = 0; e < m->cfg.nExperts; ++e) {
                const size_t k = m->key({l, e});
                if (m->pinned[k] == kLearnedPin)
                    pinnedIds.push_back({l, e});
                else if (m->pinned[k] == kNotPinned && !m->excluded[k] && !m->inVram[k])
                    free.push_back({l, e});
            }
        }
        auto hotter = [&](ExpertId a, ExpertId b) { return m->heat.colder(b, a); };
        std::sort(free.begin(), free.end(), hotter);
        std::sort(pinnedIds.begin(), pinnedIds.end(), hotter); // coldest last
        size_t next = 0;
        while (changes < m->opt.maxPinSwaps && next < free.size()) {
            const ExpertId cand = free[next];
            if (m->heat.heat(cand) <= 0) break;
            if (int(pinnedIds.size()) < cap) {
                m->setPinned(m->key(cand), kLearnedPin);
                pinnedIds.push_back(cand);
            } else {
                if (pinnedIds.empty()) break;
                const ExpertId coldest = pinnedIds.back();
                if (m->heat.heat(cand) <= m->heat.heat(coldest) * (1.0 + m->opt.pinMargin)) break;
                m->setPinned(m->key(coldest), kNotPinned);
                m->setPinned(m->key(cand), kLearnedPin);
                pinnedIds.pop_back();
                pinnedIds.insert(pinnedIds.begin(), cand);
            }
            ++next;
            ++changes;
            if (m->slotOf[m->key(cand)] < 0) {
                const int s = m->takeSlot(false, cand);
                if (s >= 0) m->markLoading(s, cand, false, loads);
            }
        }
        m->trim(); // an unpinned slot may be over the budget (see setPins)
    }
    m->submit(loads);
    return changes;
}

std::vector<ExpertId> ExpertCache::pins() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->pinnedIds();
}

std::string hotStoreFullMessage(int capacity) {
    const std::string n = std::to_string(capacity);
    return "the hot-store is full: " + n + " of " + n +
           " places are pinned; unpin an expert or raise the RAM budget";
}

Status ExpertCache::pinUser(ExpertId id) {
    std::vector<Impl::Load> loads;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (!m->routedExpert(id))
            return {ErrorCode::InvalidArgument, "expert cache: layer " + std::to_string(id.layer) +
                                                    " expert " + std::to_string(id.expert) +
                                                    " is not a routed expert of the model"};
        const size_t k = m->key(id);
        if (m->pinned[k] == kUserPin) return {};
        const int cap = m->pinCapacity();
        if (m->userPins >= cap) return {ErrorCode::InvalidArgument, hotStoreFullMessage(cap)};
        // A learned pin keeps its place; otherwise the coldest learned pin makes room.
        if (m->pinned[k] == kNotPinned && m->pinCount() >= cap)
            if (const long cold = m->coldestLearnedPin(); cold >= 0)
                m->setPinned(size_t(cold), kNotPinned);
        m->setPinned(k, kUserPin);
        m->loadPinned(id, loads);
        m->trim();
    }
    m->submit(loads);
    return {};
}

bool ExpertCache::unpinUser(ExpertId id) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (!m->routedExpert(id) || m->pinned[m->key(id)] != kUserPin) return false;
    m->setPinned(m->key(id), kNotPinned);
    m->trim();
    return true;
}

int ExpertCache::setUserPins(const std::vector<ExpertId>& ids) {
    std::vector<Impl::Load> loads;
    int n = 0;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        for (size_t k = 0; k < m->pinned.size(); ++k)
            if (m->pinned[k] == kUserPin) m->setPinned(k, kNotPinned);
        const int cap = m->pinCapacity();
        for (const ExpertId& id : ids) {
            if (n >= cap) break;
            if (!m->routedExpert(id) || m->pinned[m->key(id)] == kUserPin) continue;
            if (m->pinned[m->key(id)] == kNotPinned && m->pinCount() >= cap)
                if (const long cold = m->coldestLearnedPin(); cold >= 0)
                    m->setPinned(size_t(cold), kNotPinned);
            m->setPinned(m->key(id), kUserPin);
            ++n;
        }
        for (const ExpertId& id : ids)
            if (m->routedExpert(id) && m->pinned[m->key(id)] == kUserPin) m->loadPinned(id, loads);
        m->trim();
    }
    m->submit(loads);
    return n;
}

std::vector<ExpertId> ExpertCache::userPins() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    std::vector<ExpertId> out;
    for (size_t k = 0; k < m->pinned.size(); ++k)
        if (m->pinned[k] == kUserPin) out.push_back(m->idOf(k));
    return out;
}

bool ExpertCache::exclude(ExpertId id) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (!m->routedExpert(id)) return false;
    const size_t k = m->key(id);
    m->excluded[k] = 1;
    if (m->pinned[k] != kLearnedPin) return false;
    m->setPinned(k, kNotPinned);
    m->trim();
    return true;
}

void ExpertCache::setExclusions(const std::vector<ExpertId>& ids) {
    std::lock_guard<std::mutex> lock(m->mutex);
    std::fill(m->excluded.begin(), m->excluded.end(), 0);
    for (const ExpertId& id : ids) {
        if (!m->routedExpert(id)) continue;
        const size_t k = m->key(id);
        m->excluded[k] = 1;
        if (m->pinned[k] == kLearnedPin) m->setPinned(k, kNotPinned);
    }
    m->trim();
}

std::vector<ExpertId> ExpertCache::exclusions() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    std::vector<ExpertId> out;
    for (size_t k = 0; k < m->excluded.size(); ++k)
        if (m->excluded[k]) out.push_back(m->idOf(k));
    return out;
}

ExpertMap ExpertCache::expertMap() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return {m->cfg.nLayers, m->cfg.nExperts, m->stateMap, m->hits};
}

std::vector<double> ExpertCache::heatSnapshot() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->heat.snapshot();
}
int64_t ExpertCache::tokenClock() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->heat.now();
}
void ExpertCache::setTokenClock(int64_t tokens) {
    std::lock_guard<std::mutex> lock(m->mutex);
    m->heat.setNow(tokens);
    m->recent.setNow(tokens);
}
void ExpertCache::setHeat(ExpertId id, double heat, int64_t asOf) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (id.layer < 0 || id.layer >= m->cfg.nLayers || id.expert < 0 || id.expert >= m->cfg.nExperts)
        return;
    m->heat.setHeat(id, heat, asOf);
}

TierCounters ExpertCache::counters() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->counters;
}

TierTelemetry ExpertCache::telemetry() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    TierTelemetry t;
    t.counters = m->counters;
    TierResidency& r = t.residency;
    int vramInRam = 0; // experts in VRAM that also hold a RAM slot (loading or ready)
    for (const Slot& s : m->slots) {
        if (!s.mem) continue;
        r.allocatedBytes += m->slotBytes;
        if (s.state != SlotState::Empty && m->inVram[m->key(s.id)]) ++vramInRam;
        if (s.state == SlotState::Loading) {
            ++r.loadingExperts;
            r.cacheBytes += m->slotBytes;
        } else if (s.state == SlotState::Ready) {
            if (m->pinned[m->key(s.id)]) {
                ++r.pinnedExperts;
                r.pinnedBytes += m->slotBytes;
            } else {
                ++r.cachedExperts;
                r.cacheBytes += m->slotBytes;
            }
        }
    }
    int total = 0;
    for (int l = 0; l < m->cfg.nLayers; ++l)
        total += m->cfg.sparseLayer[size_t(l)] ? m->cfg.nExperts : 0;
    r.totalExperts = total;
    r.diskExperts = total - r.pinnedExperts - r.cachedExperts - r.loadingExperts;
    // An expert in VRAM and in no RAM slot is not on the disk tier either.
    r.diskExperts -= m->vramExperts - vramInRam;
    r.vramExperts = m->vramExperts;
    r.vramCapacity = m->vramCapacity;
    r.vramBytes = uint64_t(m->vramExperts) * m->vramExpertBytes;
    r.vramBudgetBytes = uint64_t(m->vramCapacity) * m->vramExpertBytes;
    r.budgetBytes = uint64_t(m->maxSlots) * m->slotBytes;
    r.slotBytes = m->slotBytes;
    t.routedBits = m->routedBits;
    t.experts = {m->cfg.nLayers, m->cfg.nExperts, m->stateMap, m->hits};
    if (const DiskRouter* router = m->source->router()) t.mirror = router->mirrorStatus();
    return t;
}

std::vector<uint32_t> ExpertCache::expertReads() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->reads;
}

MirrorStatus ExpertCache::mirrorStatus() const {
    const DiskRouter* router = m->source->router();
    return router ? router->mirrorStatus() : MirrorStatus{};
}

const ExpertSource& ExpertCache::source() const {
    return *m->source;
}
aio::IoPool& ExpertCache::pool() {
    return *m->pool;
}
const aio::IoPool& ExpertCache::pool() const {
    return *m->pool;
}

Status ExpertCache::checkConsistency() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    int busy = 0, loading = 0;
    for (size_t i = 0; i < m->slots.size(); ++i) {
        const Slot& s = m->slots[i];
        if (s.refs < 0) return {ErrorCode::Internal, "slot " + std::to_string(i) + ": refs < 0"};
        if (!s.mem) {
            if (s.state != SlotState::Empty)
                return {ErrorCode::Internal,
                        "slot " + std::to_string(i) + ": unallocated but used"};
            continue;
        }
        if (s.state == SlotState::Loading) ++loading;
        if (s.state != SlotState::Empty) {
            if (m->slotOf[m->key(s.id)] != int(i))
                return {ErrorCode::Internal, "slot " + std::to_string(i) + " not indexed"};
            if (!m->evictable(s)) ++busy; // loading, in use, wanted or pinned: trim() keeps it
        } else if (s.refs > 0) {
            return {ErrorCode::Internal, "slot " + std::to_string(i) + ": empty but referenced"};
        }
    }
    if (loading != m->loading)
        return {ErrorCode::Internal, "loading count " + std::to_string(m->loading) + " vs " +
                                         std::to_string(loading) + " loading slots"};
    for (size_t k = 0; k < m->slotOf.size(); ++k) {
        const int s = m->slotOf[k];
        if (s < 0) continue;
        const Slot& sl = m->slots[size_t(s)];
        if (!sl.mem || sl.state == SlotState::Empty || m->key(sl.id) != k)
            return {ErrorCode::Internal, "expert index " + std::to_string(k) + " -> slot " +
                                             std::to_string(s) + " holding another expert"};
    }
    int userPins = 0;
    for (size_t k = 0; k < m->stateMap.size(); ++k) {
        if (m->stateMap[k] != m->stateFromSlots(k))
            return {ErrorCode::Internal,
                    "expert map of layer " + std::to_string(k / m->cfg.nExperts) + " expert " +
                        std::to_string(k % m->cfg.nExperts) + " is " +
                        std::to_string(m->stateMap[k]) + ", the slot table says " +
                        std::to_string(m->stateFromSlots(k))};
        userPins += m->pinned[k] == kUserPin;
    }
    if (userPins != m->userPins)
        return {ErrorCode::Internal, "user pin count " + std::to_string(m->userPins) + " vs " +
                                         std::to_string(userPins) + " user pins"};
    if (m->pinCount() > m->pinCapacity())
        return {ErrorCode::Internal, std::to_string(m->pinCount()) + " pins over the capacity of " +
                                         std::to_string(m->pinCapacity())};
    if (m->allocated() > std::max(m->maxSlots, busy))
        return {ErrorCode::Internal, std::to_string(m->allocated()) + " slots allocated over " +
                                         std::to_string(m->maxSlots) + " in the budget"};
    return {};
}

void ExpertCache::waitIdle() {
    std::unique_lock<std::mutex> lock(m->mutex);
    m->cv.wait(lock, [&] { return m->loading == 0; });
}

} // namespace coli::tiers
