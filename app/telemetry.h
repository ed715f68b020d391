#pragma once
// A latest-wins slot for TelemetrySnapshot: the writer overwrites, the reader copies the newest.
// A mutex rather than a seqlock: the struct is small, writes happen once per token and reads
// ~30 times a second, so contention is negligible and the code stays obviously correct.
// Thread-safety: publish() and sample() may be called from any threads.
#include "engine_events.h"

#include <mutex>

namespace coli::app {

class TelemetrySlot {
public:
    void publish(const TelemetrySnapshot& s) {
        std::lock_guard lock(m_mutex);
        m_value = s;
    }
    TelemetrySnapshot sample() const {
        std::lock_guard lock(m_mutex);
        return m_value;
    }

private:
    mutable std::mutex m_mutex;
    TelemetrySnapshot m_value;
};

} // namespace coli::app
