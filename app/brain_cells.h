#pragma once
// What each cell of the Brain view shows (issue 12, docs/visualisation.md "Brain view"), from the
// engine's ExpertMap snapshots: the state byte (hue), a log-heat level (brightness) and a flash
// level (experts routed since the previous snapshot flash, fading over `flashSeconds`). Plain C++
// (no Qt), so the GUI thread's per-update work is testable without a window.
//
// The point is to know WHICH cells changed: the Brain's vertex table is rewritten for those only.
// A cell's Visual is (state byte, heat level, flash level); advance() reports the cells whose
// Visual changed since the last advance(), plus a `full` flag when every cell must be redrawn (a
// new shape, a mode change, a new turn in "this turn" mode, or the heat scale's ceiling moving,
// which happens only when the hottest cell's hits double).
//
// Heat: hits in the mode's period ("this turn": since startTurn(); "cumulative": since the model
// was loaded). level = floor(8 * log2(1 + hits)), 0..255; the scale's ceiling is the smallest
// multiple of 8 >= the largest level (at least 16), so heat() = level / ceiling in [0, 1].
// Thread-safety: a plain object; one thread at a time.
#include "tiers/tier_telemetry.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coli::app {

class BrainCells {
public:
    enum class Mode : uint8_t { Turn, Cumulative };
    struct Visual {
        uint8_t state = 0; // the ExpertMap's byte (ExpertState | kUserPinFlag)
        uint8_t heat = 0;  // log-heat level, 0..255
        uint8_t flash = 0; // 0 (none) .. kFlashLevels
        bool operator==(const Visual&) const = default;
    };
    static constexpr int kFlashLevels = 15;

    explicit BrainCells(double flashSeconds = 1.0) : m_flashSeconds(flashSeconds) {}

    // A new snapshot at time `now` (seconds, any monotonic origin). Cells whose hits grew start
    // flashing at `now`; cells whose hits or state changed are re-evaluated at the next advance().
    // A different shape (nLayers, nExperts) or fewer hits than before (a reload) restarts:
    // everything is redrawn and nothing flashes. O(cells).
    void ingest(const tiers::ExpertMap& map, double now);
    // A new answer started: "this turn" counts from the current hits.
    void startTurn();
    void setMode(Mode m);
    Mode mode() const { return m_mode; }

    // Brings every Visual to time `now`. Appends the indices of the cells whose Visual changed
    // (each once) to *changed and returns false, or returns true (a full redraw: *changed left
    // alone) when every cell must be redrawn. O(changed + fading cells), O(cells) when full.
    bool advance(double now, std::vector<int>* changed);

    int nLayers() const { return m_nLayers; }
    int nExperts() const { return m_nExperts; }
    int cellCount() const { return int(m_visual.size()); }
    const Visual& visual(int cell) const { return m_visual[size_t(cell)]; }
    // Heat in [0, 1] (see above) and flash in [0, 1] of a Visual.
    double heat(const Visual& v) const { return double(v.heat) / double(m_ceiling); }
    static double flash(const Visual& v) { return double(v.flash) / kFlashLevels; }
    int heatCeiling() const { return m_ceiling; }
    uint32_t totalHits(int cell) const { return m_hits[size_t(cell)]; }
    uint32_t turnHits(int cell) const { return m_hits[size_t(cell)] - m_turnBase[size_t(cell)]; }
    uint32_t modeHits(int cell) const {
        return m_mode == Mode::Turn ? turnHits(cell) : totalHits(cell);
    }
    uint8_t state(int cell) const { return m_state[size_t(cell)]; }
    // Cells still fading (they are re-evaluated at every advance()).
    int fadingCells() const { return int(m_fading.size()); }
    static uint8_t heatLevel(uint32_t hits);

private:
    void reset(const tiers::ExpertMap& map);
    void markDirty(int cell);
    Visual evaluate(int cell, double now) const;
    static int ceilingFor(uint8_t maxLevel);
    void rescale(); // m_maxLevel and m_ceiling from the mode's hits (a full redraw when it moved)

    double m_flashSeconds;
    Mode m_mode = Mode::Cumulative;
    int m_nLayers = 0, m_nExperts = 0;
    std::vector<uint8_t> m_state;
    std::vector<uint32_t> m_hits, m_turnBase;
    std::vector<double> m_flashStart; // -1: never flashed
    std::vector<Visual> m_visual;
    std::vector<int> m_fading; // cells with flash > 0 at the last advance()
    std::vector<int> m_dirty;  // cells to re-evaluate (changed hits or state)
    std::vector<uint8_t> m_isDirty;
    uint8_t m_maxLevel = 0; // the largest heat level of the mode's hits
    int m_ceiling = 16;
    bool m_full = true;
};

} // namespace coli::app
