#include "startup/omp_defaults.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace coli::startup {

namespace {

// Why the Adaptive mode left libgomp's default in place (for ompWaitDescription).
const char* g_idleReason = nullptr;

bool envIs(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

} // namespace

int otherRunnableTasks(int samples, int gapMicros) {
    int fewest = -1;
    for (int i = 0; i < samples; ++i) {
        if (i > 0) usleep(useconds_t(gapMicros));
        std::FILE* f = std::fopen("/proc/loadavg", "r");
        if (!f) return -1;
        double l1 = 0, l5 = 0, l15 = 0;
        int running = 0, total = 0;
        const int n = std::fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total);
        std::fclose(f);
        if (n != 5) return -1;
        const int others = std::max(0, running - 1); // the reading thread is running
        fewest = fewest < 0 ? others : std::min(fewest, others);
        if (fewest == 0) break; // the fewest cannot go lower: an idle start costs one read
    }
    return fewest;
}

void applyOmpDefaults(char** argv, OmpWaitMode mode) {
#ifdef _OPENMP
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") ||
        std::getenv(kOmpDefaultsMarker))
        return; // the user's choice (or ours, already in effect) stands
    // Under valgrind the re-executed program would run outside the tool (unless
    // --trace-children=yes): stay, with libgomp's own default.
    if (std::getenv("VALGRIND_LAUNCHER")) return;
    const char* marker = "app";
    if (mode == OmpWaitMode::Adaptive) {
        bool busy;
        if (envIs(kOmpLoadOverride, "busy") || envIs(kOmpLoadOverride, "idle")) {
            busy = envIs(kOmpLoadOverride, "busy");
        } else {
            // Oversubscription is what makes spinning slow: our threads (one per core) plus any
            // other runnable task exceed the cores.
            const int others = otherRunnableTasks();
            busy = others >= 1;
            if (others < 0) g_idleReason = "/proc/loadavg could not be read";
        }
        if (!busy) {
            if (!g_idleReason) g_idleReason = "the cores were idle at start";
            return;
        }
        marker = "busy";
    }
    if (setenv("OMP_WAIT_POLICY", "passive", 0) != 0 || setenv(kOmpDefaultsMarker, marker, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    // Still here: the exec failed. Run on as we are; libgomp keeps the default it started with.
    unsetenv(kOmpDefaultsMarker);
    unsetenv("OMP_WAIT_POLICY");
    g_idleReason = "re-executing with the passive setting failed";
#else
    (void)argv;
    (void)mode;
#endif
}

std::string ompWaitDescription() {
    const char* marker = std::getenv(kOmpDefaultsMarker);
    if (marker && std::strcmp(marker, "busy") == 0)
        return "passive (other programs were running at start)";
    if (marker && std::strcmp(marker, "app") == 0)
        return "passive (the app's default: it shares the cores with its window)";
    if (const char* p = std::getenv("OMP_WAIT_POLICY"))
        return std::string("OMP_WAIT_POLICY=") + p + " (set by the user)";
    if (const char* s = std::getenv("GOMP_SPINCOUNT"))
        return std::string("GOMP_SPINCOUNT=") + s + " (set by the user)";
    return std::string("spinning, libgomp's default (") +
           (g_idleReason ? g_idleReason : "not chosen by this program") + ")";
}

} // namespace coli::startup
