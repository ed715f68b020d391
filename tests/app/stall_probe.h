#pragma once
// A high-rate timer probe of the GUI thread: a 1 ms precise QTimer whose longest gap between two
// timeouts is the longest time the GUI thread did not get back to its event loop (a stall: a
// long layout, a slow model update, a blocking call). Used by the chat rendering GUI test (which
// only prints it: no timed assertions in tests) and by bench_gui_stall.
// Thread-safety: GUI thread only.
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <algorithm>
#include <vector>

namespace coli::app {

class StallProbe : public QObject {
public:
    StallProbe() {
        m_timer.setTimerType(Qt::PreciseTimer);
        m_timer.setInterval(1);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            const qint64 now = m_clock.nsecsElapsed();
            m_gaps.push_back(now - m_last);
            m_last = now;
        });
    }
    void start() {
        m_gaps.clear();
        m_clock.start();
        m_last = 0;
        m_timer.start();
    }
    void stop() {
        m_timer.stop();
        m_duration = m_clock.nsecsElapsed();
    }
    // Longest gap between two ticks, in milliseconds (0 before two ticks).
    double longestMs() const {
        return m_gaps.empty() ? 0 : double(*std::max_element(m_gaps.begin(), m_gaps.end())) / 1e6;
    }
    // The q-quantile of the gaps (q in [0, 1]), in milliseconds.
    double quantileMs(double q) const {
        if (m_gaps.empty()) return 0;
        std::vector<qint64> g = m_gaps;
        const size_t k = std::min(g.size() - 1, size_t(q * double(g.size())));
        std::nth_element(g.begin(), g.begin() + long(k), g.end());
        return double(g[k]) / 1e6;
    }
    // Gaps longer than `ms` milliseconds.
    int gapsOver(double ms) const {
        return int(std::count_if(m_gaps.begin(), m_gaps.end(),
                                 [&](qint64 g) { return double(g) / 1e6 > ms; }));
    }
    size_t ticks() const { return m_gaps.size(); }
    double durationSeconds() const { return double(m_duration) / 1e9; }

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_last = 0;
    qint64 m_duration = 0;
    std::vector<qint64> m_gaps;
};

} // namespace coli::app
