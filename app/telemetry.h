#pragma once
// A latest-wins slot (threading contract rule 4): the writer overwrites, the reader copies the
// newest. A mutex rather than a seqlock: the values are small, writes happen once per token and
// reads ~30 times a second, so contention is negligible and the code stays obviously correct.
// Used for TelemetrySnapshot (the answer being streamed) and TierStatus (the expert tiers).
// Thread-safety: publish() and sample() may be called from any threads.
#include "engine_events.h"
#include "tier_status.h"

#include <mutex>

namespace coli::app {

template <typename T> class LatestWins {
public:
    void publish(const T& s) {
        std::lock_guard lock(m_mutex);
        m_value = s;
    }
    T sample() const {
        std::lock_guard lock(m_mutex);
        return m_value;
    }

private:
    mutable std::mutex m_mutex;
    T m_value;
};

using TelemetrySlot = LatestWins<TelemetrySnapshot>;
using TierStatusSlot = LatestWins<TierStatus>;

} // namespace coli::app
