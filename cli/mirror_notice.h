#pragma once
// The one warning of a mirror switched off during a run (tiers/disk_router.h: a read error, or the
// mirror folder gone): `coli generate` and `coli chat` check after every text piece and after each
// answer, on the thread that generates, and print it once on stderr.
// Thread-safety: one thread.
#include "tiers/expert_cache.h"

namespace coli::cli {

class MirrorNotice {
public:
    explicit MirrorNotice(const tiers::ExpertCache* cache) : m_cache(cache) {}
    // Prints "coli: warning: mirror DIR switched off: ..." the first time the mirror is found
    // switched off; nothing otherwise (no mirror, still in use, already said).
    void check();

private:
    const tiers::ExpertCache* m_cache;
    bool m_said = false;
};

} // namespace coli::cli
