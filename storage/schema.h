#pragma once
// The released database schema (docs/storage.md "Schema"): its migrations and a check that an
// opened file has the tables and columns this code reads and writes.
// Version 1: models, expert_usage, pins, file_hashes. Version 2: sessions, messages, runs,
// app_state and the full-text indexes sessions_fts, messages_fts (with their triggers). Version 3:
// user_pins, pin_exclusions and the topic probe's atlas_probes, atlas_topics, atlas_counts,
// atlas_coactivation, atlas_positions. Version 4: downloads, download_files (download records).
// Version 5: runs.prefill_bytes_read and runs.prefill_tier_tokens (the prompt's share). Version 6:
// runs.hits_vram (routed experts computed on the GPU; older runs' recovered from routed). Later
// versions are new steps appended to schemaMigrations(); a released step is never edited, and each
// released version has a fixture dump in tests/storage/fixtures/ that a test upgrades.
// Thread-safety: schemaMigrations() returns immutable data; validateSchema uses the connection's
// thread.
#include "core/status.h"
#include "storage/migrations.h"

#include <cstdint>
#include <sqlite3.h>
#include <string>
#include <vector>

namespace coli::storage {

constexpr int kSchemaVersion = 6;
// PRAGMA application_id of a Colibri database ("Coli" in ASCII): a file with another non-zero
// application_id belongs to another program and is refused, never migrated.
constexpr int32_t kApplicationId = 0x436F6C69;

const std::vector<Migration>& schemaMigrations();

// Checks that every table of kSchemaVersion exists with (at least) its columns, and that the
// full-text search triggers exist. Errors: Malformed naming the file and the missing table,
// column or trigger; Io.
Status validateSchema(sqlite3* db, const std::string& file);

} // namespace coli::storage
