#include "storage/schema.h"

#include "storage/sqlite_util.h"

#include <set>

namespace coli::storage {

namespace {

// Version 1. Times: created/last_used in Unix seconds; last_seen in tokens of the model's own
// token clock (docs/storage.md "Heat"); heat is a decayed routing count (REAL >= 0).
constexpr const char* kV1 = R"sql(
PRAGMA application_id = 1131375721;
CREATE TABLE models(
    id INTEGER PRIMARY KEY,
    identity TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    created INTEGER NOT NULL,
    last_used INTEGER NOT NULL);
CREATE TABLE expert_usage(
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    heat REAL NOT NULL CHECK(heat >= 0),
    last_seen INTEGER NOT NULL CHECK(last_seen >= 0),
    PRIMARY KEY(model, layer, expert)) WITHOUT ROWID;
CREATE TABLE pins(
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    tier TEXT NOT NULL CHECK(tier IN ('ram', 'vram')),
    PRIMARY KEY(model, layer, expert)) WITHOUT ROWID;
CREATE TABLE file_hashes(
    path TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL);
)sql";

// Version 2: the chat history (docs/storage.md "Schema version 2"). Times in Unix milliseconds;
// durations in seconds; seeds are the engine's uint64 stored with the same 64 bits (a seed of
// 2^63 or more reads as negative in SQL). Sampling settings are JSON objects (absent key = the
// model's default). Search: external-content FTS5 tables over sessions.title and messages.text,
// kept in step by triggers (docs/storage.md explains the choice).
constexpr const char* kV2 = R"sql(
CREATE TABLE sessions(
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    model_identity TEXT NOT NULL DEFAULT '',
    model_path TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    sampling TEXT NOT NULL DEFAULT '{}'
        CHECK(CASE WHEN json_valid(sampling) THEN json_type(sampling) = 'object' ELSE 0 END),
    seed INTEGER);
CREATE INDEX sessions_by_updated ON sessions(updated DESC, id DESC);
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL CHECK(prompt_tokens >= 0),
    reused_tokens INTEGER NOT NULL CHECK(reused_tokens >= 0),
    generated_tokens INTEGER NOT NULL CHECK(generated_tokens >= 0),
    tokens_per_second REAL NOT NULL CHECK(tokens_per_second >= 0),
    ttft_seconds REAL NOT NULL CHECK(ttft_seconds >= 0),
    prefill_seconds REAL NOT NULL CHECK(prefill_seconds >= 0),
    decode_seconds REAL NOT NULL CHECK(decode_seconds >= 0),
    attention_s REAL NOT NULL CHECK(attention_s >= 0),
    expert_ffn_s REAL NOT NULL CHECK(expert_ffn_s >= 0),
    expert_wait_s REAL NOT NULL CHECK(expert_wait_s >= 0),
    sampling_s REAL NOT NULL CHECK(sampling_s >= 0),
    other_s REAL NOT NULL CHECK(other_s >= 0),
    routed INTEGER NOT NULL CHECK(routed >= 0),
    hits_pinned INTEGER NOT NULL CHECK(hits_pinned >= 0),
    hits_cache INTEGER NOT NULL CHECK(hits_cache >= 0),
    in_flight_hits INTEGER NOT NULL CHECK(in_flight_hits >= 0),
    misses INTEGER NOT NULL CHECK(misses >= 0),
    bytes_read INTEGER NOT NULL CHECK(bytes_read >= 0),
    evictions INTEGER NOT NULL CHECK(evictions >= 0),
    prefetch_issued INTEGER NOT NULL CHECK(prefetch_issued >= 0),
    prefetch_used INTEGER NOT NULL CHECK(prefetch_used >= 0),
    tier_tokens INTEGER NOT NULL CHECK(tier_tokens >= 0));
CREATE INDEX runs_by_session ON runs(session);
CREATE TABLE messages(
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position INTEGER NOT NULL CHECK(position >= 0),
    role TEXT NOT NULL CHECK(role IN ('system', 'user', 'assistant')),
    text TEXT NOT NULL,
    created INTEGER NOT NULL,
    stop_reason TEXT CHECK(stop_reason IN
        ('eos', 'max_tokens', 'stop_string', 'cancelled', 'context_full', 'failed')),
    seed INTEGER,
    sampling TEXT
        CHECK(CASE WHEN json_valid(sampling) THEN json_type(sampling) = 'object'
                   ELSE sampling IS NULL END),
    run INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    UNIQUE(session, position));
CREATE INDEX messages_by_run ON messages(run);
CREATE TABLE app_state(
    key TEXT PRIMARY KEY,
    value) WITHOUT ROWID;
CREATE VIRTUAL TABLE sessions_fts USING fts5(
    title, content = 'sessions', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE messages_fts USING fts5(
    text, content = 'messages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
    INSERT INTO sessions_fts(rowid, title) VALUES(new.id, new.title);
END;
CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
    INSERT INTO sessions_fts(sessions_fts, rowid, title) VALUES('delete', old.id, old.title);
END;
CREATE TRIGGER sessions_fts_update AFTER UPDATE OF title ON sessions BEGIN
    INSERT INTO sessions_fts(sessions_fts, rowid, title) VALUES('delete', old.id, old.title);
    INSERT INTO sessions_fts(rowid, title) VALUES(new.id, new.title);
END;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, text) VALUES(new.id, new.text);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text) VALUES('delete', old.id, old.text);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text) VALUES('delete', old.id, old.text);
    INSERT INTO messages_fts(rowid, text) VALUES(new.id, new.text);
END;
)sql";

// Version 3: user pins and the topic probe behind the Atlas (docs/storage.md "Schema version 3").
// A user pin is the user's choice (clicked in the Brain): learned rebalancing never swaps it out.
// pin_exclusions: learned pins the user unpinned, kept out of learned pins until the user resets
// them. The probe tables keep what `coli atlas` and the app's topic probe measured, per probe run:
// counts (exact integers: shares are derived, slots / (tokens x top_k)), each expert's kept top-N
// co-activation pairs, and the 3D positions and labels the Atlas draws. Times in Unix ms.
constexpr const char* kV3 = R"sql(
CREATE TABLE user_pins(
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    created INTEGER NOT NULL,
    PRIMARY KEY(model, layer, expert)) WITHOUT ROWID;
CREATE TABLE pin_exclusions(
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    created INTEGER NOT NULL,
    PRIMARY KEY(model, layer, expert)) WITHOUT ROWID;
CREATE TABLE atlas_probes(
    id INTEGER PRIMARY KEY,
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    topic_set TEXT NOT NULL,
    topic_set_sha256 TEXT NOT NULL,
    created INTEGER NOT NULL,
    n_layers INTEGER NOT NULL CHECK(n_layers > 0),
    n_experts INTEGER NOT NULL CHECK(n_experts > 0),
    top_k INTEGER NOT NULL CHECK(top_k > 0));
CREATE INDEX atlas_probes_by_model ON atlas_probes(model, created DESC, id DESC);
CREATE TABLE atlas_topics(
    probe INTEGER NOT NULL REFERENCES atlas_probes(id) ON DELETE CASCADE,
    topic INTEGER NOT NULL CHECK(topic >= 0),
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    prompts INTEGER NOT NULL CHECK(prompts >= 0),
    tokens INTEGER NOT NULL CHECK(tokens >= 0),
    PRIMARY KEY(probe, topic)) WITHOUT ROWID;
CREATE TABLE atlas_counts(
    probe INTEGER NOT NULL REFERENCES atlas_probes(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    topic INTEGER NOT NULL CHECK(topic >= 0),
    slots INTEGER NOT NULL CHECK(slots >= 0),
    PRIMARY KEY(probe, layer, expert, topic)) WITHOUT ROWID;
CREATE TABLE atlas_coactivation(
    probe INTEGER NOT NULL REFERENCES atlas_probes(id) ON DELETE CASCADE,
    layer_a INTEGER NOT NULL CHECK(layer_a >= 0),
    expert_a INTEGER NOT NULL CHECK(expert_a >= 0),
    layer_b INTEGER NOT NULL CHECK(layer_b >= 0),
    expert_b INTEGER NOT NULL CHECK(expert_b >= 0),
    count INTEGER NOT NULL CHECK(count > 0),
    CHECK(layer_a < layer_b OR (layer_a = layer_b AND expert_a < expert_b)),
    PRIMARY KEY(probe, layer_a, expert_a, layer_b, expert_b)) WITHOUT ROWID;
CREATE TABLE atlas_positions(
    probe INTEGER NOT NULL REFERENCES atlas_probes(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    x REAL NOT NULL,
    y REAL NOT NULL,
    z REAL NOT NULL,
    dominant_topic INTEGER CHECK(dominant_topic >= 0),
    specialist INTEGER NOT NULL CHECK(specialist IN (0, 1)),
    PRIMARY KEY(probe, layer, expert)) WITHOUT ROWID;
)sql";

// Version 4: download records (docs/storage.md "Schema version 4"): one row per model download
// (`coli download`, the app's wizard) and one per file of it, so that a killed process resumes
// where it stopped. The commit column is commit_sha (COMMIT is an SQL keyword). includes: the
// --include globs as a JSON array of strings. etag: the ETag of the response that started the
// file's .part (the If-Range value of a resume). Times in Unix milliseconds.
constexpr const char* kV4 = R"sql(
CREATE TABLE downloads(
    id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL,
    revision TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    dir TEXT NOT NULL UNIQUE,
    includes TEXT NOT NULL DEFAULT '[]'
        CHECK(CASE WHEN json_valid(includes) THEN json_type(includes) = 'array' ELSE 0 END),
    state TEXT NOT NULL CHECK(state IN ('active', 'paused', 'done', 'failed', 'cancelled')),
    message TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL);
CREATE TABLE download_files(
    download INTEGER NOT NULL REFERENCES downloads(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    size INTEGER NOT NULL CHECK(size >= 0),
    blob_id TEXT NOT NULL,
    lfs_sha256 TEXT,
    etag TEXT NOT NULL DEFAULT '',
    bytes_done INTEGER NOT NULL DEFAULT 0 CHECK(bytes_done >= 0),
    state TEXT NOT NULL CHECK(state IN ('pending', 'done', 'failed')),
    PRIMARY KEY(download, path)) WITHOUT ROWID;
)sql";

// Version 5: a run's prompt part of the expert reads (GenerateStats::tiersPrefill), so a turn's
// read per decode token and per prompt token are told apart (a prefill chunk reads each routed
// expert once for all its tokens). NULL in runs saved before version 5 (only the totals known).
constexpr const char* kV5 = R"sql(
ALTER TABLE runs ADD COLUMN prefill_bytes_read INTEGER CHECK(prefill_bytes_read >= 0);
ALTER TABLE runs ADD COLUMN prefill_tier_tokens INTEGER CHECK(prefill_tier_tokens >= 0);
)sql";

// Version 6: a run's routed experts found in VRAM and computed on the GPU (TierCounters::hitsVram;
// docs/gpu.md). Runs saved before it kept `routed` whole (routed = hits_pinned + hits_cache +
// misses + VRAM hits), so their VRAM hits are what the other places leave over: recovered exactly
// (0 for runs without a GPU tier).
constexpr const char* kV6 = R"sql(
ALTER TABLE runs ADD COLUMN hits_vram INTEGER NOT NULL DEFAULT 0 CHECK(hits_vram >= 0);
UPDATE runs SET hits_vram = routed - hits_pinned - hits_cache - misses
    WHERE routed > hits_pinned + hits_cache + misses;
)sql";

struct TableColumns {
    const char* table;
    std::vector<const char*> columns;
};

const std::vector<TableColumns>& expectedTables() {
    static const std::vector<TableColumns> t = {
        {"models", {"id", "identity", "path", "created", "last_used"}},
        {"expert_usage", {"model", "layer", "expert", "heat", "last_seen"}},
        {"pins", {"model", "layer", "expert", "tier"}},
        {"file_hashes", {"path", "bytes", "mtime_ns", "sha256"}},
        {"sessions",
         {"id", "title", "model_identity", "model_path", "created", "updated", "system_prompt",
          "sampling", "seed"}},
        {"messages",
         {"id", "session", "position", "role", "text", "created", "stop_reason", "seed", "sampling",
          "run"}},
        {"runs",
         {"id",
          "session",
          "created",
          "prompt_tokens",
          "reused_tokens",
          "generated_tokens",
          "tokens_per_second",
          "ttft_seconds",
          "prefill_seconds",
          "decode_seconds",
          "attention_s",
          "expert_ffn_s",
          "expert_wait_s",
          "sampling_s",
          "other_s",
          "routed",
          "hits_pinned",
          "hits_cache",
          "in_flight_hits",
          "misses",
          "bytes_read",
          "evictions",
          "prefetch_issued",
          "prefetch_used",
          "tier_tokens",
          "prefill_bytes_read",
          "prefill_tier_tokens",
          "hits_vram"}},
        {"app_state", {"key", "value"}},
        {"sessions_fts", {"title"}},
        {"messages_fts", {"text"}},
        {"user_pins", {"model", "layer", "expert", "created"}},
        {"pin_exclusions", {"model", "layer", "expert", "created"}},
        {"atlas_probes",
         {"id", "model", "topic_set", "topic_set_sha256", "created", "n_layers", "n_experts",
          "top_k"}},
        {"atlas_topics", {"probe", "topic", "name", "label", "prompts", "tokens"}},
        {"atlas_counts", {"probe", "layer", "expert", "topic", "slots"}},
        {"atlas_coactivation", {"probe", "layer_a", "expert_a", "layer_b", "expert_b", "count"}},
        {"atlas_positions",
         {"probe", "layer", "expert", "x", "y", "z", "dominant_topic", "specialist"}},
        {"downloads",
         {"id", "repo", "revision", "commit_sha", "endpoint", "dir", "includes", "state", "message",
          "created", "updated"}},
        {"download_files",
         {"download", "path", "size", "blob_id", "lfs_sha256", "etag", "bytes_done", "state"}},
    };
    return t;
}

// The triggers that keep the full-text indexes in step with their tables: without one, search
// silently goes stale (or an external-content index goes corrupt), so a missing one is refused.
const std::vector<const char*>& expectedTriggers() {
    static const std::vector<const char*> t = {"sessions_fts_insert", "sessions_fts_delete",
                                               "sessions_fts_update", "messages_fts_insert",
                                               "messages_fts_delete", "messages_fts_update"};
    return t;
}

} // namespace

static_assert(kApplicationId == 1131375721, "kV1 spells kApplicationId in decimal");

const std::vector<Migration>& schemaMigrations() {
    static const std::vector<Migration> steps = {{1, kV1}, {2, kV2}, {3, kV3},
                                                 {4, kV4}, {5, kV5}, {6, kV6}};
    return steps;
}

Status validateSchema(sqlite3* db, const std::string& file) {
    for (const TableColumns& t : expectedTables()) {
        detail::Stmt s;
        COLI_RETURN_IF_ERROR(s.prepare(db, "SELECT name FROM pragma_table_info(?)", file));
        s.bind(1, std::string(t.table));
        std::set<std::string> have;
        int rc;
        while ((rc = s.step()) == SQLITE_ROW)
            have.insert(s.text(0));
        if (rc != SQLITE_DONE) return detail::sqliteStatus(db, rc, file, "checking the schema");
        if (have.empty())
            return {ErrorCode::Malformed, file + ": schema version " +
                                              std::to_string(kSchemaVersion) + " but the table '" +
                                              t.table + "' is missing"};
        for (const char* c : t.columns)
            if (!have.count(c))
                return {ErrorCode::Malformed,
                        file + ": table '" + t.table + "' lacks the column '" + c + "'"};
    }
    for (const char* trigger : expectedTriggers()) {
        detail::Stmt s;
        COLI_RETURN_IF_ERROR(
            s.prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", file));
        s.bind(1, std::string(trigger));
        const int rc = s.step();
        if (rc == SQLITE_DONE)
            return {ErrorCode::Malformed,
                    file + ": schema version " + std::to_string(kSchemaVersion) +
                        " but the search trigger '" + trigger + "' is missing"};
        if (rc != SQLITE_ROW) return detail::sqliteStatus(db, rc, file, "checking the schema");
    }
    return {};
}

} // namespace coli::storage
