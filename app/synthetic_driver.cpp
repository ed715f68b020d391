#include "synthetic_driver.h"

#include <algorithm>
#include <cmath>

namespace coli::app {

SyntheticDriver::SyntheticDriver(BrainMonitor* monitor, SyntheticOptions opt, QObject* parent)
    : QObject(parent), m_monitor(monitor), m_gen(opt) {
    m_monitor->setSynthetic(true);
    m_monitor->apply(m_gen.status());
    m_timer.setTimerType(Qt::PreciseTimer);
    m_timer.setInterval(int(std::lround(1000.0 / std::max(0.1, opt.tokensPerSecond))));
    connect(&m_timer, &QTimer::timeout, this, &SyntheticDriver::step);
    connect(m_monitor, &BrainMonitor::userPinRequested, this, [this](int layer, int expert) {
        if (m_gen.toggleUserPin(layer, expert)) m_monitor->apply(m_gen.status());
    });
}

void SyntheticDriver::start() {
    m_timer.start();
}

void SyntheticDriver::stop() {
    m_timer.stop();
}

void SyntheticDriver::step() {
    const TierStatus& s = m_gen.step();
    if (m_gen.turnStarted()) m_monitor->startTurn();
    m_monitor->apply(s);
}

} // namespace coli::app
