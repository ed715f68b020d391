#include "runtime/session_kv_file.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace coli {

namespace {

constexpr char kMagic[8] = {'C', 'O', 'L', 'I', '-', 'K', 'V', '\n'};
constexpr uint64_t kHeaderSumAt = 2040;       // xxh64 of bytes [0, 2040)
constexpr uint64_t kSlotAt[2] = {3072, 3584}; // {seq, count, xxh64(seq, count)}
constexpr uint64_t kKeyAt = 16, kMaxKey = kHeaderSumAt - kKeyAt;

std::string keyText(const SessionKvKey& k) {
    return "model=" + k.model + "\nweights=" + k.weights + "\nlayers=" + std::to_string(k.layers) +
           "\nheads=" + std::to_string(k.shape.heads) + "\nkdim=" + std::to_string(k.shape.kDim) +
           "\nvdim=" + std::to_string(k.shape.vDim) + "\ndtype=f32\n";
}

uint64_t positionFloats(const SessionKvKey& k) {
    return uint64_t(k.layers) * uint64_t(k.shape.heads) * uint64_t(k.shape.kDim + k.shape.vDim);
}

std::string errnoText(int e) {
    return std::strerror(e);
}

struct Slot {
    uint64_t seq = 0, count = 0, sum = 0;
    bool valid() const {
        const uint64_t v[2] = {seq, count};
        return seq > 0 && XXH64(v, sizeof v, 0) == sum;
    }
};

// Reads exactly n bytes at offset; false at end of file or on error (errno set on error).
bool readAt(int fd, uint64_t offset, void* data, size_t n) {
    auto* p = static_cast<char*>(data);
    while (n > 0) {
        const ssize_t r = ::pread(fd, p, n, off_t(offset));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= size_t(r);
        offset += uint64_t(r);
    }
    return true;
}

} // namespace

uint64_t SessionKvFile::recordBytes(const SessionKvKey& key) {
    return 8 + positionFloats(key) * sizeof(float) + 8;
}

SessionKvFile::~SessionKvFile() {
    if (m_fd >= 0) ::close(m_fd);
}

Status SessionKvFile::writeAt(uint64_t offset, const void* data, size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
        size_t chunk = n;
        bool injected = false;
        if (m_written + chunk > m_failAfter) {
            chunk = size_t(m_failAfter - std::min(m_written, m_failAfter));
            injected = true;
        }
        ssize_t w = chunk > 0 ? ::pwrite(m_fd, p, chunk, off_t(offset)) : 0;
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG))
            return {ErrorCode::NoSpace, "disk full writing " + m_path};
        if (w < 0) return {ErrorCode::Io, m_path + ": write failed: " + errnoText(errno)};
        m_written += uint64_t(w);
        p += w;
        n -= size_t(w);
        offset += uint64_t(w);
        if (injected) return {ErrorCode::NoSpace, "disk full writing " + m_path};
    }
    return {};
}

Status SessionKvFile::syncData() {
    if (::fdatasync(m_fd) != 0) {
        if (errno == ENOSPC || errno == EDQUOT)
            return {ErrorCode::NoSpace, "disk full writing " + m_path};
        return {ErrorCode::Io, m_path + ": fdatasync failed: " + errnoText(errno)};
    }
    return {};
}

Status SessionKvFile::setCount(uint64_t count) {
    Slot s;
    s.seq = m_seq + 1;
    s.count = count;
    const uint64_t v[2] = {s.seq, s.count};
    s.sum = XXH64(v, sizeof v, 0);
    const uint64_t raw[3] = {s.seq, s.count, s.sum};
    COLI_RETURN_IF_ERROR(writeAt(kSlotAt[s.seq % 2], raw, sizeof raw));
    COLI_RETURN_IF_ERROR(syncData());
    m_seq = s.seq;
    return {};
}

Status SessionKvFile::readRecords(uint64_t count, SessionKvState* state,
                                  std::vector<std::string>* notes) {
    const uint64_t floats = positionFloats(m_key);
    std::vector<char> rec(m_recordBytes);
    state->tokens.reserve(count);
    state->rows.reserve(count * floats);
    for (uint64_t r = 0; r < count; ++r) {
        std::string why;
        if (!readAt(m_fd, kHeaderBytes + r * m_recordBytes, rec.data(), rec.size())) {
            why = "record " + std::to_string(r) + " is incomplete";
        } else {
            uint64_t sum = 0;
            std::memcpy(&sum, rec.data() + rec.size() - 8, 8);
            if (XXH64(rec.data(), rec.size() - 8, 0) != sum)
                why = "record " + std::to_string(r) + "'s checksum does not hold";
        }
        if (!why.empty()) {
            if (notes)
                notes->push_back(m_path + ": cut back from " + std::to_string(count) + " to " +
                                 std::to_string(r) + " records: " + why);
            return {};
        }
        int32_t token = 0;
        std::memcpy(&token, rec.data(), 4);
        state->tokens.push_back(token);
        const size_t at = state->rows.size();
        state->rows.resize(at + floats);
        std::memcpy(state->rows.data() + at, rec.data() + 8, floats * sizeof(float));
    }
    return {};
}

Result<std::unique_ptr<SessionKvFile>>
SessionKvFile::open(const std::string& path, const SessionKvKey& key, SessionKvState* state,
                    std::vector<std::string>* notes, const SessionKvOptions& opt) {
    if (key.layers <= 0 || key.shape.heads <= 0 || key.shape.kDim <= 0 || key.shape.vDim < 0)
        return Status(ErrorCode::InvalidArgument, path + ": a KV file needs positive dimensions");
    if (key.model.find('\n') != std::string::npos || key.weights.find('\n') != std::string::npos)
        return Status(ErrorCode::InvalidArgument, path + ": the KV key must not contain newlines");
    const std::string text = keyText(key);
    if (text.size() > kMaxKey)
        return Status(ErrorCode::InvalidArgument, path + ": the KV key is too long");
    *state = SessionKvState();
    std::unique_ptr<SessionKvFile> f(new SessionKvFile());
    f->m_path = path;
    f->m_key = key;
    f->m_recordBytes = recordBytes(key);
    f->m_failAfter = opt.failAfterBytes;

    auto openFd = [&]() -> Status {
        f->m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (f->m_fd < 0)
            return {ErrorCode::Io, path + ": cannot open the KV file: " + errnoText(errno)};
        return {};
    };
    COLI_RETURN_IF_ERROR(openFd());
    // One writer per file: the app and `coli chat --session` continuing the same chat at once
    // would interleave their records. Released when the descriptor closes (also on a kill).
    if (::flock(f->m_fd, LOCK_EX | LOCK_NB) != 0)
        return Status(ErrorCode::Io, path + ": in use by another process (the app or another "
                                            "coli chat continuing this session)");
    struct stat st {};
    if (::fstat(f->m_fd, &st) != 0) return Status(ErrorCode::Io, path + ": " + errnoText(errno));

    // Why an existing file cannot be used (empty: it can).
    std::string refuse;
    Slot best;
    if (st.st_size > 0) {
        std::vector<char> h(kHeaderBytes, 0);
        if (!readAt(f->m_fd, 0, h.data(), h.size())) {
            refuse = "shorter than its header";
        } else if (std::memcmp(h.data(), kMagic, 8) != 0) {
            refuse = "not a Colibri KV file";
        } else {
            uint32_t version = 0, keyLen = 0;
            uint64_t sum = 0;
            std::memcpy(&version, h.data() + 8, 4);
            std::memcpy(&keyLen, h.data() + 12, 4);
            std::memcpy(&sum, h.data() + kHeaderSumAt, 8);
            if (XXH64(h.data(), kHeaderSumAt, 0) != sum)
                refuse = "its header's checksum does not hold";
            else if (version != kFormatVersion)
                refuse = "format version " + std::to_string(version) + " (this build reads " +
                         std::to_string(kFormatVersion) + ")";
            else if (keyLen != text.size() ||
                     std::memcmp(h.data() + kKeyAt, text.data(), text.size()) != 0)
                refuse = "written for another model, weight format or KV layout";
            for (int i = 0; i < 2 && refuse.empty(); ++i) {
                Slot s;
                std::memcpy(&s, h.data() + kSlotAt[i], sizeof s);
                if (s.valid() && s.seq > best.seq) best = s;
            }
            if (refuse.empty() && best.seq == 0) refuse = "no record count holds its checksum";
        }
    }
    if (!refuse.empty()) {
        const std::string aside = path + ".old";
        ::close(f->m_fd);
        f->m_fd = -1;
        if (::rename(path.c_str(), aside.c_str()) != 0)
            return Status(ErrorCode::Io,
                          path + ": " + refuse + "; cannot set it aside: " + errnoText(errno));
        if (notes) notes->push_back(path + ": " + refuse + ": set aside as " + aside);
        COLI_RETURN_IF_ERROR(openFd());
        if (::flock(f->m_fd, LOCK_EX | LOCK_NB) != 0)
            return Status(ErrorCode::Io, path + ": in use by another process");
        st.st_size = 0;
    }
    if (st.st_size == 0) {
        std::vector<char> h(kHeaderBytes, 0);
        std::memcpy(h.data(), kMagic, 8);
        const uint32_t version = kFormatVersion, keyLen = uint32_t(text.size());
        std::memcpy(h.data() + 8, &version, 4);
        std::memcpy(h.data() + 12, &keyLen, 4);
        std::memcpy(h.data() + kKeyAt, text.data(), text.size());
        const uint64_t sum = XXH64(h.data(), kHeaderSumAt, 0);
        std::memcpy(h.data() + kHeaderSumAt, &sum, 8);
        COLI_RETURN_IF_ERROR(f->writeAt(0, h.data(), h.size()));
        COLI_RETURN_IF_ERROR(f->setCount(0)); // durable; slot seq 1
        // The new name must survive a crash too.
        const std::string dir = std::filesystem::path(path).parent_path().string();
        const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
        return f;
    }

    // An existing file of this key: its records up to the count, checked.
    f->m_seq = best.seq;
    const uint64_t whole = (uint64_t(st.st_size) - kHeaderBytes) / f->m_recordBytes;
    uint64_t count = best.count;
    if (count > whole) {
        if (notes)
            notes->push_back(path + ": cut back from " + std::to_string(count) + " to " +
                             std::to_string(whole) + " records: the file ends early");
        count = whole;
    }
    COLI_RETURN_IF_ERROR(f->readRecords(count, state, notes));
    f->m_tokens = state->tokens;
    if (f->m_tokens.size() != best.count) COLI_RETURN_IF_ERROR(f->setCount(f->m_tokens.size()));
    if (uint64_t(st.st_size) != f->fileBytes() && ::ftruncate(f->m_fd, off_t(f->fileBytes())) != 0)
        return Status(ErrorCode::Io, path + ": cannot cut the KV file back: " + errnoText(errno));
    return f;
}

Status SessionKvFile::save(std::span<const int32_t> tokens, const KVCache& kv) {
    if (int64_t(tokens.size()) != kv.size())
        return {ErrorCode::InvalidArgument, m_path + ": " + std::to_string(tokens.size()) +
                                                " tokens for a KV cache of " +
                                                std::to_string(kv.size())};
    const KvShape s = kv.shape();
    if (!tokens.empty() && (kv.layers() != m_key.layers || s.heads != m_key.shape.heads ||
                            s.kDim != m_key.shape.kDim || s.vDim != m_key.shape.vDim))
        return {ErrorCode::InvalidArgument, m_path + ": the KV cache's layout is not the file's"};
    const size_t before = m_tokens.size();
    size_t common = 0;
    while (common < m_tokens.size() && common < tokens.size() && m_tokens[common] == tokens[common])
        ++common;
    if (common < m_tokens.size()) {
        // Cut back first, durably: records past `common` are about to be overwritten.
        COLI_RETURN_IF_ERROR(setCount(common));
        m_tokens.resize(common);
    }
    if (tokens.size() == common) {
        if (::ftruncate(m_fd, off_t(fileBytes())) != 0)
            return {ErrorCode::Io, m_path + ": cannot cut the KV file back: " + errnoText(errno)};
        return {};
    }
    const uint64_t floats = positionFloats(m_key);
    std::vector<char> rec(m_recordBytes, 0);
    Status st;
    for (size_t r = common; r < tokens.size() && st.isOk(); ++r) {
        std::memcpy(rec.data(), &tokens[r], 4);
        kv.copyPosition(int(r), reinterpret_cast<float*>(rec.data() + 8));
        const uint64_t sum = XXH64(rec.data(), rec.size() - 8, 0);
        std::memcpy(rec.data() + 8 + floats * sizeof(float), &sum, 8);
        st = writeAt(kHeaderBytes + r * m_recordBytes, rec.data(), rec.size());
    }
    if (st.isOk()) st = syncData();
    if (st.isOk()) st = setCount(tokens.size());
    if (!st.isOk()) {
        // Whatever was written past the durable count is dropped (best effort: open() does it
        // too, and the count never covers it).
        [[maybe_unused]] const int ignored = ::ftruncate(m_fd, off_t(fileBytes()));
        return st;
    }
    const bool shorter = tokens.size() < before;
    m_tokens.assign(tokens.begin(), tokens.end());
    // A rolling-window turn shares little and holds fewer tokens: the old records past the new
    // count are no part of the file any more (the count is durable), so their space goes back
    // now rather than at the next open (the size the app shows, the cap over all files). Best
    // effort: the save itself has succeeded, and open() trims what this leaves.
    if (shorter) {
        [[maybe_unused]] const int ignored = ::ftruncate(m_fd, off_t(fileBytes()));
    }
    return {};
}

} // namespace coli
