#include "tiers/disk_router.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sys/stat.h>

namespace coli::tiers {

namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::string canonicalPath(const std::string& path) {
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : p.string();
}

} // namespace

double mirrorPick(int layer, int expert) {
    const uint64_t key = (uint64_t(uint32_t(layer)) << 32) | uint32_t(expert);
    return double(splitmix64(key) >> 11) * 0x1.0p-53;
}

DiskRouter::DiskRouter(aio::IoPool& pool, MirrorSetup setup)
    : m_pool(pool), m_setup(std::move(setup)) {}

Result<int> DiskRouter::openFile(const std::string& primaryPath, bool buffered) {
    Result<int> f = m_pool.openFile(primaryPath, buffered);
    if (!f) return f.status();
    if (std::string note = m_pool.fileNote(*f); !note.empty()) m_warnings.push_back(note);
    const auto it = m_setup.files.find(canonicalPath(primaryPath));
    if (it == m_setup.files.end() || m_mirrorOf.count(*f)) return f;
    MirrorFile mf;
    mf.path = it->second;
    // A buffered primary gets a buffered mirror copy: the source did not align its reads. (A
    // buffered copy of an O_DIRECT primary reads the aligned ranges just as well.)
    Result<int> m = m_pool.openFile(mf.path, buffered || !m_pool.fileDirect(*f));
    if (m) {
        if (std::string note = m_pool.fileNote(*m); !note.empty())
            m_warnings.push_back("mirror " + m_setup.dir + ": " + note);
    }
    struct stat st {};
    if (!m) {
        m_warnings.push_back("mirror " + m_setup.dir + ": " + m.status().message() +
                             "; the primary serves it");
    } else if (::stat(mf.path.c_str(), &st) != 0) {
        m_warnings.push_back("mirror " + m_setup.dir + ": " + mf.path + ": " +
                             std::strerror(errno) + "; the primary serves it");
    } else {
        mf.file = *m;
        mf.dev = uint64_t(st.st_dev);
        mf.ino = uint64_t(st.st_ino);
        m_mirrorOf.emplace(*f, std::move(mf));
    }
    return f;
}

bool DiskRouter::mirrored(std::span<const aio::ReadRequest> reads) const {
    for (const aio::ReadRequest& r : reads)
        if (!m_mirrorOf.count(r.file)) return false;
    return !reads.empty();
}

Disk DiskRouter::pick(int layer, int expert, std::span<const aio::ReadRequest> reads) const {
    if (m_off.load(std::memory_order_acquire) || !mirrored(reads)) return Disk::Primary;
    return mirrorPick(layer, expert) < m_setup.share ? Disk::Mirror : Disk::Primary;
}

std::string DiskRouter::mirrorGone(std::span<const aio::ReadRequest> reads) const {
    for (const aio::ReadRequest& r : reads) {
        const MirrorFile& mf = m_mirrorOf.at(r.file);
        struct stat st {};
        if (::stat(mf.path.c_str(), &st) != 0)
            return mf.path + ": " + std::strerror(errno) + " (the mirror was removed or unmounted)";
        if (uint64_t(st.st_dev) != mf.dev || uint64_t(st.st_ino) != mf.ino)
            return mf.path + ": no longer the file checked at load (replaced, or unmounted)";
    }
    return {};
}

void DiskRouter::fallBack(const std::string& why) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_off.exchange(true, std::memory_order_acq_rel)) return;
    m_problem = "mirror " + m_setup.dir + " switched off: " + why +
                "; every expert is read from the primary disk for the rest of the run";
}

void DiskRouter::submit(int layer, int expert, std::span<const aio::ReadRequest> reads, Done done) {
    Disk disk = pick(layer, expert, reads);
    if (disk == Disk::Mirror) {
        if (std::string gone = mirrorGone(reads); !gone.empty()) {
            fallBack(gone);
            disk = Disk::Primary;
        }
    }
    submitTo(disk, layer, expert, {reads.begin(), reads.end()}, std::move(done));
}

void DiskRouter::submitTo(Disk disk, int layer, int expert, std::vector<aio::ReadRequest> reads,
                          Done done) {
    // Shared by the expert's reads; the last one to complete decides.
    struct Group {
        std::atomic<size_t> left{0};
        std::mutex mutex;
        Status first;
        std::vector<aio::ReadRequest> reads; // as given: primary file indices
        Done done;
    };
    auto g = std::make_shared<Group>();
    g->left.store(reads.size(), std::memory_order_relaxed);
    g->reads = std::move(reads);
    g->done = std::move(done);
    // Copies: the group's vector is read again by a fallback after every read completed.
    std::vector<aio::ReadRequest> issue = g->reads;
    if (disk == Disk::Mirror)
        for (aio::ReadRequest& r : issue)
            r.file = m_mirrorOf.at(r.file).file;
    for (const aio::ReadRequest& r : issue) {
        m_pool.submit(r, [this, g, disk, layer, expert](const Status& s) {
            if (!s.isOk()) {
                std::lock_guard<std::mutex> lock(g->mutex);
                if (g->first.isOk()) g->first = s;
            }
            if (g->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
            Status result;
            {
                std::lock_guard<std::mutex> lock(g->mutex);
                result = g->first;
            }
            if (!result.isOk() && disk == Disk::Mirror) {
                // The bytes that did land are overwritten by the primary's reads. submit() from a
                // completion is allowed (aio/io_pool.h); the cache waits for `done`, so the pool
                // outlives this read.
                fallBack(result.message());
                submitTo(Disk::Primary, layer, expert, std::move(g->reads), std::move(g->done));
                return;
            }
            g->done(result, disk);
        });
    }
}

MirrorStatus DiskRouter::mirrorStatus() const {
    MirrorStatus s;
    s.configured = !m_mirrorOf.empty();
    s.dir = m_setup.dir;
    s.files = int(m_mirrorOf.size());
    s.share = m_setup.share;
    s.fellBack = m_off.load(std::memory_order_acquire);
    if (s.fellBack) {
        std::lock_guard<std::mutex> lock(m_mutex);
        s.problem = m_problem;
    }
    return s;
}

} // namespace coli::tiers
