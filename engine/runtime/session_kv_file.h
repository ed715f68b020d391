#pragma once
// One conversation's KV cache persisted crash-safe, one file per session, so that a restarted
// process continues the conversation with zero re-prefill (docs/design.md "KV state"). Layout:
//   [0, 4096)        the header: magic "COLI-KV\n", format version, the key (model identity,
//                    weight format, layers, KV layout, dtype) as text, an xxh64 of all that at
//                    offset 2040; two record-count slots {seq, count, xxh64} at 3072 and 3584
//   4096 + r * R     record r (R = recordBytes(key)): the token id (i32), 4 zero bytes, the
//                    position's keys and values of every layer (f32, KVCache::copyPosition's
//                    layout: full K/V rows for GQA families, the latent + rope key for MLA), then
//                    the xxh64 of the record's preceding bytes
// Writing: new records go past the stored count and are made durable (fdatasync) before the
// count that covers them is written into the slot not holding the current count (seq + 1) and
// made durable. Cutting back (a new prompt diverging from what is stored) writes the smaller count
// first. So a crash at any moment leaves a file whose valid slot of highest seq counts complete,
// checksummed records of one consistent conversation prefix.
// Opening: the count of the valid slot with the highest seq; records are read and checked in
// order and the file is cut back to the last record whose checksum holds and to whole records. A
// file that is not ours, of another format version, of another key (model, weights, layout), or
// whose header or both slots fail their checksums is set aside (renamed to <path>.old), never
// applied.
// Thread-safety: one thread at a time per object.
#include "core/status.h"
#include "forward/model.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace coli {

// What a file is for: KV bits depend on all of it (a checkpoint and its int4 container give other
// bits).
struct SessionKvKey {
    std::string model;   // the model's identity (storage/model_identity.h), any text without '\n'
    std::string weights; // the weights as loaded, e.g. "checkpoint", "container q4_g64/q8_g64"
    int layers = 0;      // decoder layers
    KvShape shape;       // per layer and position (model/config.h)
};

// The conversation a file held when it was opened.
struct SessionKvState {
    std::vector<int32_t> tokens; // in order
    std::vector<float> rows;     // [tokens.size(), layers * heads * (kDim + vDim)]
};

struct SessionKvOptions {
    // Tests: once this many bytes have been written through the object, a write fails as on a
    // full disk (ENOSPC), after writing what still fits.
    uint64_t failAfterBytes = UINT64_MAX;
};

class SessionKvFile {
public:
    static constexpr uint32_t kFormatVersion = 1;
    static constexpr uint64_t kHeaderBytes = 4096;

    // Opens `path`, creating it (and nothing else: its folder must exist) when absent. *state
    // receives the stored conversation (empty for a new or set-aside file); notes receives one
    // line per repair, naming the file: a cut back ("cut back from 12 to 9 records: record 9's
    // checksum does not hold"), a set-aside ("written for another model or weight format: set
    // aside as <path>.old").
    // The file stays locked (flock, exclusive) while the object lives: one writer per session.
    // Errors: InvalidArgument (a key with no layers, a '\n' in model or weights); Io (the file
    // cannot be opened, read or written, or another process holds it; naming it); NoSpace when
    // creating its header.
    static Result<std::unique_ptr<SessionKvFile>>
    open(const std::string& path, const SessionKvKey& key, SessionKvState* state,
         std::vector<std::string>* notes, const SessionKvOptions& opt = {});
    ~SessionKvFile();

    // Makes the file hold exactly `tokens` with their KV rows from kv (positions 0..n-1): keeps the
    // stored records that are a prefix of `tokens`, cuts back the rest and appends the new ones; a
    // file left with fewer records than it had shrinks to them. Durable when it returns OK.
    // Requires tokens.size() == kv.size() and kv of this key's layout (InvalidArgument otherwise).
    // Errors: NoSpace ("disk full writing <path>") and Io; the file then still holds the
    // conversation it held before the call, or the part of it the new tokens share, with every
    // record complete.
    Status save(std::span<const int32_t> tokens, const KVCache& kv);

    uint64_t records() const { return m_tokens.size(); } // durable records
    uint64_t fileBytes() const { return kHeaderBytes + records() * m_recordBytes; }
    const std::string& path() const { return m_path; }
    // Bytes of one record for this key.
    static uint64_t recordBytes(const SessionKvKey& key);

private:
    SessionKvFile() = default;
    Status writeAt(uint64_t offset, const void* data, size_t n);
    Status syncData();
    Status setCount(uint64_t count); // into the other slot, durable
    Status readRecords(uint64_t count, SessionKvState* state, std::vector<std::string>* notes);

    std::string m_path;
    int m_fd = -1;
    SessionKvKey m_key;
    uint64_t m_recordBytes = 0;
    uint64_t m_seq = 0;            // of the slot holding the current count
    std::vector<int32_t> m_tokens; // the durable records' tokens
    uint64_t m_written = 0, m_failAfter = UINT64_MAX;
};

} // namespace coli
