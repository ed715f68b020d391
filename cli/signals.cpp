#include "signals.h"

#include <csignal>
#include <unistd.h>

namespace coli::cli {
namespace {

std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "signal handler needs a lock-free flag");

extern "C" void onSigint(int) {
    if (g_interrupt.exchange(true)) _exit(130);
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

} // namespace coli::cli
