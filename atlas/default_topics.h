#pragma once
// Which topic set the probe uses when none is given (docs/visualisation.md "Topic probe"):
// resources/topics/default-model.json for the shipped default model (recognised by its weights'
// identity, storage/model_identity.h, so a copy or a container of it counts too), and
// resources/topics/general.json for any other model.
// Where the sets and the shipped model are: installed, <prefix>/share/colibri/topics and
// <prefix>/share/colibri/models/<name> next to the program's <prefix>/bin; else (a build tree)
// the source tree's resources/, compiled in.
// Thread-safety: reads files; `cache` (may be null) is used from the calling thread only.
#include "core/status.h"
#include "storage/file_hash_cache.h"

#include <string>

namespace coli::atlas {

// The folder holding the topic sets, for a program in `binDir`.
std::string topicsDir(const std::string& binDir);
// The shipped default model's folder, for a program in `binDir`.
std::string shippedModelDir(const std::string& binDir);
// The default topic file for the model whose identity is `modelIdentity`.
// Errors: those of modelIdentity for the shipped model (NotFound when it is missing: then
// general.json is NOT silently chosen, since the user asked for the default).
Result<std::string> defaultTopicFile(const std::string& binDir, const std::string& modelIdentity,
                                     storage::FileHashCache* cache);

} // namespace coli::atlas
