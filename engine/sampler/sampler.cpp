#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace coli {

namespace {

std::string num(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

Status rangeError(const char* name, const char* range, double got) {
    return {ErrorCode::InvalidArgument,
            std::string(name) + " must be " + range + " (got " + num(got) + ")"};
}

// splitmix64 (Steele, Lea & Flood 2014), used only to spread a seed over xoshiro's state.
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

} // namespace

Status validate(const SamplerParams& p) {
    // Written as !(in range) so NaN, which fails every comparison, is rejected too.
    if (!(p.temperature >= 0.0f && p.temperature <= 100.0f))
        return rangeError("temperature", "in [0, 100] (0 = greedy)", p.temperature);
    if (p.topK < 0) return rangeError("topK", ">= 0 (0 = off)", p.topK);
    if (!(p.topP > 0.0f && p.topP <= 1.0f))
        return rangeError("topP", "in (0, 1] (1 = off)", p.topP);
    if (!(p.minP >= 0.0f && p.minP < 1.0f))
        return rangeError("minP", "in [0, 1) (0 = off)", p.minP);
    if (!(p.repeatPenalty > 0.0f && p.repeatPenalty <= 10.0f))
        return rangeError("repeatPenalty", "in (0, 10] (1 = off)", p.repeatPenalty);
    if (p.repeatLastN < 0) return rangeError("repeatLastN", ">= 0 (0 = off)", p.repeatLastN);
    return Status::ok();
}

Sampler::Sampler(const SamplerParams& p) : m_p(p), m_valid(validate(p)) {
    reseed(p.seed);
}

void Sampler::reseed(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& s : m_state)
        s = splitmix64(x);
}

// xoshiro256** 1.0 (Blackman & Vigna 2018).
uint64_t Sampler::nextU64() {
    uint64_t* s = m_state;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double Sampler::nextUniform() {
    return double(nextU64() >> 11) * 0x1.0p-53;
}

Result<int32_t> Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
    if (!m_valid) return m_valid;
    if (logits.empty()) return {ErrorCode::InvalidArgument, "sampler: empty logits row"};
    const size_t n = logits.size();

    size_t bad = 0, firstBad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(logits[i])) {
            if (bad++ == 0) firstBad = i;
        }
    }
    if (bad) {
        return {ErrorCode::Numeric, "sampler: " + std::to_string(bad) + " of " + std::to_string(n) +
                                        " logits are NaN or Inf; first at index " +
                                        std::to_string(firstBad) + " (" + num(logits[firstBad]) +
                                        ")"};
    }

    m_cand.resize(n);
    for (size_t i = 0; i < n; ++i)
        m_cand[i] = {double(logits[i]), 0.0, int32_t(i)};

    // --- repetition penalty, once per distinct recent token ---
    if (m_p.repeatPenalty != 1.0f && m_p.repeatLastN > 0 && !history.empty()) {
        const size_t take = std::min(history.size(), size_t(m_p.repeatLastN));
        m_recent.assign(history.end() - ptrdiff_t(take), history.end());
        std::sort(m_recent.begin(), m_recent.end());
        m_recent.erase(std::unique(m_recent.begin(), m_recent.end()), m_recent.end());
        const double pen = m_p.repeatPenalty;
        for (int32_t t : m_recent) {
            if (t < 0 || size_t(t) >= n) continue;
            double& l = m_cand[size_t(t)].logit;
            l = l > 0 ? l / pen : l * pen;
        }
    }

    // --- greedy ---
    if (m_p.temperature == 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < n; ++i)
            if (m_cand[i].logit > m_cand[best].logit) best = i; // strict: ties keep the lower id
        return int32_t(best);
    }

    // Higher logit first, then lower id: a total order, so every sort gives the same sequence.
    auto before = [](const Candidate& a, const Candidate& b) {
        return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
    };
    size_t kept = n;
    bool sorted = false;
    // --- top-k (temperature is monotonic, so it does not change which k survive) ---
    if (m_p.topK > 0 && size_t(m_p.topK) < n) {
        kept = size_t(m_p.topK);
        std::partial_sort(m_cand.begin(), m_cand.begin() + ptrdiff_t(kept), m_cand.end(), before);
        sorted = true;
    }

    // --- temperature + softmax (unnormalised; shifted by the max so exp cannot overflow, and the
    // most likely token has p = exp(0) = 1 exactly) ---
    double maxLogit = m_cand[0].logit;
    for (size_t i = 1; i < kept; ++i)
        maxLogit = std::max(maxLogit, m_cand[i].logit);
    const double temp = m_p.temperature;
    double total = 0.0;
    for (size_t i = 0; i < kept; ++i) {
        const double p = std::exp((m_cand[i].logit - maxLogit) / temp);
        m_cand[i].p = p;
        total += p;
    }

    // --- min-p threshold: minP x p_max, with p_max = 1 ---
    // Min-p comes after top-p in the chain, but the tokens it drops are the least likely ones, a
    // suffix of the sorted order. Dropping them before sorting (as here, when top-k did not
    // already sort) therefore leaves top-p's prefix unchanged, except that a prefix running into
    // the dropped suffix ends at the end of what is left, which is what min-p would leave anyway.
    // It saves sorting the whole vocabulary when only top-p is on.
    const double minP = m_p.minP;
    auto applyMinP = [&] {
        size_t w = 0;
        for (size_t i = 0; i < kept; ++i)
            if (m_cand[i].p >= minP) m_cand[w++] = m_cand[i]; // keeps the order
        kept = w;
    };
    bool minPDone = false;
    if (minP > 0.0 && !sorted) {
        applyMinP();
        minPDone = true;
    }

    // --- top-p: the smallest prefix (by probability) whose mass reaches topP of the total ---
    if (m_p.topP < 1.0f) {
        const double target = double(m_p.topP) * total;
        // The prefix is usually short: sort only the best m (exact, the order being total), and
        // widen m only when their mass falls short of the target.
        size_t m = sorted ? kept : std::min<size_t>(kept, 256);
        size_t i = 0;
        for (;;) {
            if (!sorted) {
                // Best m to the front in O(kept), then sort just those.
                auto first = m_cand.begin(), mid = first + ptrdiff_t(m);
                if (m < kept) std::nth_element(first, mid, first + ptrdiff_t(kept), before);
                std::sort(first, mid, before);
            }
            double cum = 0.0;
            i = 0;
            while (i < m) {
                cum += m_cand[i].p;
                ++i;
                if (cum >= target) break;
            }
            if (cum >= target || m == kept) break;
            m = std::min(kept, m * 16);
        }
        sorted = true;
        kept = std::max<size_t>(i, 1);
    }

    // --- min-p: drop tokens below minP x the most likely one (which always survives) ---
    if (minP > 0.0 && !minPDone) applyMinP();

    // --- renormalise and draw ---
    double mass = 0.0;
    for (size_t i = 0; i < kept; ++i)
        mass += m_cand[i].p;
    const double u = nextUniform() * mass;
    double cum = 0.0;
    for (size_t i = 0; i < kept; ++i) {
        cum += m_cand[i].p;
        if (u < cum) return m_cand[i].id;
    }
    return m_cand[kept - 1].id; // u landed on the rounding slack at the very end
}

} // namespace coli
