#pragma once
// User pins and pin exclusions in the Colibri database (schema v3, docs/storage.md "User pins"):
// a user pin is an expert the user pinned (a click in the Brain view, `coli usage pin`): learned
// rebalancing never swaps it out; an exclusion is a learned pin the user unpinned: it is kept out
// of learned pins until the user resets the exclusions. Both are per model (Storage::modelId).
//
// A UserPinStore is a view over an open Storage's connection (database.h): it holds a reference,
// no handle of its own, and must not outlive the Storage.
//
// Thread-safety: like its Storage, used only on the thread that opened the Storage (docs/design.md
// rule 6: the app's storage thread). Results are plain values that may cross threads.
//
// Failure policy: every function returns a Status / Result whose message names the database file
// and what was being done; each call is ONE transaction (all or nothing). Errors common to all:
// InvalidArgument (a negative layer or expert), NotFound (no model with that id; reads of an
// unknown model return empty lists instead), Io (locked by another connection after the busy
// timeout, read-only, disk full), Malformed (a damaged file).
#include "core/status.h"
#include "storage/database.h"

#include <cstdint>
#include <vector>

namespace coli::storage {

struct PinnedExpert {
    int layer = 0;
    int expert = 0;
    int64_t createdMs = 0; // Unix milliseconds when it was pinned / excluded
    bool operator==(const PinnedExpert&) const = default;
};

struct UserPinLists {
    std::vector<PinnedExpert> pins;       // oldest first (ties by layer, expert): the order in
                                          // which they are applied when the hot-store is small
    std::vector<PinnedExpert> exclusions; // by (layer, expert)
};

class UserPinStore {
public:
    explicit UserPinStore(Storage& storage) : m_db(storage) {}

    // Both lists of the model, read in one transaction (a consistent pair).
    Result<UserPinLists> load(int64_t model);
    // Makes (layer, expert) a user pin (createdMs 0 = now); an existing one keeps its time.
    // Returns true when it was new.
    Result<bool> pin(int64_t model, int layer, int expert, int64_t createdMs = 0);
    // Drops the user pin; true when there was one.
    Result<bool> unpin(int64_t model, int layer, int expert);
    // Excludes (layer, expert) from learned pins (createdMs 0 = now); true when it was new.
    Result<bool> exclude(int64_t model, int layer, int expert, int64_t createdMs = 0);
    // Deletes every exclusion of the model; returns how many there were.
    Result<int64_t> resetExclusions(int64_t model);

private:
    Result<bool> insert(const char* table, int64_t model, int layer, int expert, int64_t createdMs,
                        const std::string& what);
    Storage& m_db;
};

} // namespace coli::storage
