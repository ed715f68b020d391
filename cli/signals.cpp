#include "signals.h"

#include <csignal>
#include <termios.h>
#include <unistd.h>

namespace coli::cli {
namespace {

std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "signal handler needs a lock-free flag");

// Written before g_restoreTerminal is set, read by the handler only after it saw the flag.
termios g_savedTerminal{};
std::atomic<bool> g_restoreTerminal{false};

extern "C" void onSigint(int) {
    if (!g_interrupt.exchange(true)) return;
    if (g_restoreTerminal.load()) tcsetattr(STDIN_FILENO, TCSANOW, &g_savedTerminal);
    _exit(130);
}

} // namespace

std::atomic<bool>& interruptFlag() {
    return g_interrupt;
}

void installSigintHandler() {
    struct sigaction sa {};
    sa.sa_handler = onSigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; // no SA_RESTART: a read() at the chat prompt returns EINTR
    sigaction(SIGINT, &sa, nullptr);
}

void clearInterrupt() {
    g_interrupt.store(false);
}

void rememberTerminal(const termios& saved) {
    g_restoreTerminal.store(false);
    g_savedTerminal = saved;
    g_restoreTerminal.store(true);
}

void forgetTerminal() {
    g_restoreTerminal.store(false);
}

} // namespace coli::cli
