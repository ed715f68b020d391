#pragma once
// A recorded token stream, replayed by EngineWorker in place of a real answer (tests and the
// GUI stall benchmark: WorkerOptions::replayFile). Plain C++, no Qt.
//
// File format (UTF-8 text, one piece per line, written by tools/replay/make_replay.py):
//   # comment lines (what was recorded, how, under which load)
//   <delay>\t<piece>
// delay: microseconds since the previous piece (for the first piece: since the request, i.e.
// the time to first token), a non-negative integer; piece: the decoded text of one token as a
// JSON string ("\n", "\u00e9", ...), complete UTF-8. Blank lines are ignored.
//
// Thread-safety: free function, no shared state.
#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::app {

struct ReplayPiece {
    int64_t delayMicros = 0;
    std::string text;
};

// Reads a recording. Errors name the file and line: NotFound/Io (unreadable), Malformed (a line
// without a tab, a negative or non-numeric delay, a piece that is not one JSON string, no pieces).
Result<std::vector<ReplayPiece>> readTokenReplay(const std::string& path);

} // namespace coli::app
