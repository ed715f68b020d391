#pragma once
// Feeds a BrainMonitor from the synthetic generator (synthetic_telemetry.h) instead of the
// engine: `colibri --synthetic-telemetry 75x256` (docs/visualisation.md "Brain view"). Live: a
// timer steps one token every 1/tokensPerSecond; tests call step() themselves. A click's pin
// request toggles the generator's user pin, shown at once.
// Thread-safety: GUI thread only (QObject affinity).
#include "brain_monitor.h"
#include "synthetic_telemetry.h"

#include <QObject>
#include <QTimer>

namespace coli::app {

class SyntheticDriver : public QObject {
    Q_OBJECT
public:
    // Takes over `monitor` (setSynthetic(true)) and applies the generator's first snapshot.
    SyntheticDriver(BrainMonitor* monitor, SyntheticOptions opt, QObject* parent = nullptr);
    void start(); // live, at opt.tokensPerSecond
    void stop();
    // One token: the generator steps and the monitor gets the snapshot (a new turn first when
    // the token starts one).
    void step();
    SyntheticTelemetry& generator() { return m_gen; }

private:
    BrainMonitor* m_monitor;
    SyntheticTelemetry m_gen;
    QTimer m_timer;
};

} // namespace coli::app
