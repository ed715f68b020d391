#include "startup/omp_defaults.h"

#include <cstdlib>
#include <unistd.h>

namespace coli::startup {

void applyOmpDefaults(char** argv) {
#ifdef _OPENMP
    if (std::getenv(kOmpWaitPolicyVar) || std::getenv("GOMP_SPINCOUNT") ||
        std::getenv(kOmpDefaultsMarker))
        return; // the user's choice (or ours, already in effect) stands
    // Under valgrind the re-executed program would run outside the tool (unless
    // --trace-children=yes): stay, with libgomp's own default.
    if (std::getenv("VALGRIND_LAUNCHER")) return;
    if (setenv(kOmpWaitPolicyVar, kOmpWaitPolicyDefault, 0) != 0 ||
        setenv(kOmpDefaultsMarker, "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    // Still here: the exec failed. Run on as we are; libgomp keeps the default it started with.
#else
    (void)argv;
#endif
}

} // namespace coli::startup
