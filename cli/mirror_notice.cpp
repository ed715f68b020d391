#include "mirror_notice.h"

#include "options.h"

namespace coli::cli {

void MirrorNotice::check() {
    if (m_said || !m_cache) return;
    const tiers::MirrorStatus s = m_cache->mirrorStatus();
    if (!s.fellBack) return;
    m_said = true;
    printWarning(s.problem);
}

} // namespace coli::cli
