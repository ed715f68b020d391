#pragma once
// SIGINT (Ctrl+C) handling shared by the subcommands.
// The handler only stores to lock-free atomics (async-signal-safe); a second Ctrl+C while the
// first is still pending calls _exit(130) (also async-signal-safe) so a stuck step can always be
// left. The handler is installed without SA_RESTART, so a blocking read() returns EINTR.
#include <atomic>

struct termios;

namespace coli::cli {

// Set by the handler; the engine polls it between tokens (Session::generate's cancel flag).
std::atomic<bool>& interruptFlag();
void installSigintHandler();
// Clears a pending Ctrl+C (e.g. before a new chat turn).
void clearInterrupt();
// The terminal settings on stdin that the second Ctrl+C's _exit restores first (tcsetattr is
// async-signal-safe): set while a mode is changed (QuietControlEcho), cleared when restored.
void rememberTerminal(const struct termios& saved);
void forgetTerminal();

} // namespace coli::cli
