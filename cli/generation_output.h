#pragma once
// What `generate` and `chat` print around a generation: pieces to stdout (flushed), statistics
// to stderr.
#include "forward/model.h"
#include "runtime/session.h"

#include <string>
#include <string_view>

namespace coli::cli {

// Writes a piece to stdout and flushes, remembering whether the text ended with a newline.
class PieceWriter {
public:
    void operator()(std::string_view piece);
    bool endsWithNewline() const { return m_endsWithNewline; }
    bool wroteAnything() const { return m_wrote; }
    const std::string& text() const { return m_text; }
    void clear();

private:
    bool m_endsWithNewline = true;
    bool m_wrote = false;
    std::string m_text;
};

// The end-of-generation report for `generate` (one fact per line).
void printStats(const GenerateStats& s, const std::string& sampling);
// The engine thread's time split (GenerateStats::time) as shares of the call's wall time:
// "attention 31% · expert FFN 42% · expert wait 12% · sampling 2% · other 13% of 412.3 ms".
std::string describeTimeSplit(const GenerateStats& s);
// The VRAM tier's share of a generation (the counters' difference): "gpu: 480 experts computed
// in VRAM (960 token jobs, 0 flagged and recomputed on the CPU), 96/96 experts resident, 5.7 MiB
// uploaded, 12.3 ms waiting for the device".
std::string describeGpu(const GpuCounters& before, const GpuCounters& after);
// One line per chat turn: "[12 tokens, ttft 3.1 ms, 250.0 tok/s, stop: eos]".
void printTurnStats(const GenerateStats& s);

} // namespace coli::cli
