#pragma once
// How OpenMP worker threads wait between parallel regions, chosen once per process.
//
// libgomp's default (neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT set) lets an idle worker spin for
// about 300,000 iterations (a few ms) before it sleeps. When other programs keep the cores busy,
// the spinning workers take the time slices that the working ones need, and decoding is about 100
// times slower (docs/performance.md, "OpenMP waiting"). Our default is OMP_WAIT_POLICY=passive:
// idle workers sleep at once.
//
// libgomp reads its environment in its own initialiser, before main(); a setenv() in main() is
// too late, and one in an executable's .preinit_array is undone when libc's initialiser resets
// `environ`. So applyOmpDefaults() sets the variable and re-executes the program once.
namespace coli::startup {

// The variable and value set when the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT.
inline constexpr const char* kOmpWaitPolicyVar = "OMP_WAIT_POLICY";
inline constexpr const char* kOmpWaitPolicyDefault = "passive";
// Set in the re-executed process, so that it never re-executes again.
inline constexpr const char* kOmpDefaultsMarker = "COLI_OMP_DEFAULTS_APPLIED";

// Call first in main(), before any thread starts. When OpenMP is part of the program, neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, the marker is absent and the program does not run
// under valgrind (VALGRIND_LAUNCHER; the new image would leave the tool): sets
// OMP_WAIT_POLICY=passive and the marker, then execv()s /proc/self/exe with the same argv (open
// files, the terminal, signal dispositions set to ignore, and the process id stay the same).
// Returns when nothing needed doing, or when the exec failed (e.g. no /proc): the program then
// runs on with libgomp's own default. Never exits. Not thread-safe (setenv); argv as main's.
void applyOmpDefaults(char** argv);

} // namespace coli::startup
