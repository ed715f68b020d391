#pragma once
// A model's identity: the key under which its learned heat and pins are stored, the same for a
// Hugging Face checkpoint and for a colibri container converted from it, different for any other
// weights (docs/storage.md "Model identity").
//
// identity = SHA-256 (hex) of the text
//     "colibri-model-identity 1\n" + for each source shard, sorted by file name:
//     "<len(name)>:<name> <bytes> <sha256 of the file, hex>\n"
// over the SOURCE *.safetensors shards (the index's shards, else every *.safetensors file, as the
// engine's Checkpoint reads them). A container's colibri.json records each source file's name,
// size and SHA-256 (source.files) but not its header bytes, so whole-file hashes are the common
// ground; for a checkpoint they are computed, once per (path, size, mtime) with a FileHashCache.
// Thread-safety: identityFromShards/containerIdentity are pure; the others read files and use the
// cache from the calling thread.
#include "convert/manifest.h"
#include "core/status.h"
#include "storage/file_hash_cache.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::storage {

struct SourceShard {
    std::string file;   // file name relative to the model folder
    uint64_t bytes = 0; // file size
    std::string sha256; // 64 lowercase hex digits of the whole file
};

// The identity (64 lowercase hex) of a set of shards; order of `shards` does not matter.
std::string identityFromShards(std::vector<SourceShard> shards);

// From a container's manifest: its source.files ending in ".safetensors".
// Errors: Malformed (no source safetensors file listed).
Result<std::string> containerIdentity(const convert::Container& manifest);

// From a Hugging Face checkpoint folder: hashes every shard (or takes the digest from `cache`,
// may be null, when the file's path, size and mtime match; new digests are remembered there).
// Errors: those of Checkpoint::open (NotFound, Malformed, ...), Io (stat or read failure).
Result<std::string> checkpointIdentity(const std::string& dir, FileHashCache* cache);

// A container (folder with colibri.json: openContainer, no hashing) or a checkpoint.
Result<std::string> modelIdentity(const std::string& dir, FileHashCache* cache);

} // namespace coli::storage
