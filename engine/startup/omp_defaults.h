#pragma once
// How OpenMP worker threads wait between parallel regions, chosen once per process.
//
// libgomp's default (neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT set) lets an idle worker spin for
// about 300,000 iterations (a few ms) before it sleeps. On idle cores that is the fastest setting
// (the decoder has dozens of parallel regions per token, and a spinning worker starts the next
// one at once: 1,900 tok/s on the default model vs 300 with OMP_WAIT_POLICY=passive). When other
// programs keep the cores busy, spinning workers take the time slices the working ones need, and
// decoding can be 25-100 times slower than with passive waiting (docs/performance.md, "OpenMP
// waiting"). No single setting is good in both cases, so the default depends on the machine:
//   Adaptive (coli, bench_kernels): passive when other programs are runnable at start (the
//            kernel's count of runnable tasks, /proc/loadavg field 4, sampled five times over
//            ~8 ms, fewest taken), libgomp's spinning default otherwise;
//   Passive  (colibri): always passive: the app shares the cores with its own GUI and render
//            threads (Qt Quick renders on the CPU where there is no GPU).
//
// libgomp reads its environment in its own initialiser, before main(); a setenv() in main() is
// too late, and one in an executable's .preinit_array is undone when libc's initialiser resets
// `environ`. So applyOmpDefaults() sets the variable and re-executes the program once.
#include <string>

namespace coli::startup {

enum class OmpWaitMode { Adaptive, Passive };

// Set in the re-executed process ("busy" or "app"), so that it never re-executes again.
inline constexpr const char* kOmpDefaultsMarker = "COLI_OMP_DEFAULTS_APPLIED";
// For tests and for users who know better: "busy" or "idle" replaces the measurement of the
// Adaptive mode.
inline constexpr const char* kOmpLoadOverride = "COLI_OMP_LOAD";

// Call first in main(), before any thread starts. Does nothing when OpenMP is not part of the
// program, when OMP_WAIT_POLICY or GOMP_SPINCOUNT is set (the user's choice stands), when the
// marker is present, or under valgrind (VALGRIND_LAUNCHER: the new image would leave the tool).
// Otherwise, when the mode asks for passive waiting (above): sets OMP_WAIT_POLICY=passive and the
// marker, then execv()s /proc/self/exe with the same argv (open files, the terminal, signal
// dispositions set to ignore, and the process id stay the same). Returns when nothing needed
// doing, or when the exec failed (e.g. no /proc): the program then runs on with libgomp's own
// default. Never exits. Not thread-safe (setenv); argv as main's.
void applyOmpDefaults(char** argv, OmpWaitMode mode = OmpWaitMode::Adaptive);

// How this process's OpenMP threads wait and why, for reports (e.g. "passive (other programs were
// running at start)", "spinning, libgomp's default (the cores were idle at start)",
// "OMP_WAIT_POLICY=active (set by the user)"). Call after applyOmpDefaults. Thread-safe.
std::string ompWaitDescription();

// Other runnable tasks right now: the fewest of `samples` readings of /proc/loadavg's running
// count (minus this process's one thread), `gapMicros` apart, stopping at the first 0; -1 when it
// cannot be read.
int otherRunnableTasks(int samples = 5, int gapMicros = 2000);

} // namespace coli::startup
