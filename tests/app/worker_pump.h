#pragma once
// Test helper for the EngineWorker tests: drains the worker's event ring until `stop` says so.
#include "engine_worker.h"

#include <chrono>
#include <functional>
#include <thread>

namespace coli::app::test {

// Drains events until `stop` says so (or 60 s pass: a hang fails instead of blocking CTest).
inline bool pump(EngineWorker& w, const std::function<bool(const EngineEvent&)>& stop) {
    using namespace std::chrono_literals;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    bool done = false;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        w.ring().drain([&](EngineEvent&& ev) { done = done || stop(ev); });
        if (!done) std::this_thread::sleep_for(200us);
    }
    return done;
}

} // namespace coli::app::test
