#pragma once
// Reading tokenizer.json with errors that name the file and the JSON path, e.g.
//   "Malformed: tokenizer.json: model.merges[12]: expected \"a b\" or [\"a\", \"b\"]".
// Internal header. Thread-safe (pure functions).
#include "core/status.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace coli::tokjson {

using Json = nlohmann::json;

// Where a JSON value sits: the file name (for messages) and its path inside the document.
struct Ctx {
    const std::string* file;
    std::string path;

    Ctx at(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
    Ctx at(size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }
};

Status malformed(const Ctx& ctx, const std::string& what);
Status unsupported(const Ctx& ctx, const std::string& what);

// The member `key` of object j. Missing (or null when !allowNull) -> Malformed.
Result<const Json*> member(const Json& j, const char* key, const Ctx& ctx);
Result<std::string> getString(const Json& j, const char* key, const Ctx& ctx);
// Optional members: the default when missing or null; Malformed when of the wrong type.
Result<std::string> optString(const Json& j, const char* key, const Ctx& ctx,
                              const std::string& dflt);
Result<bool> optBool(const Json& j, const char* key, const Ctx& ctx, bool dflt);
Result<long long> optInt(const Json& j, const char* key, const Ctx& ctx, long long dflt);
// "type" of a component object; Malformed when j is not an object or has no string "type".
Result<std::string> typeOf(const Json& j, const Ctx& ctx);
// Calls each(item, itemCtx) on every element of the list j[key] (the sub-components of a
// "Sequence"), in order, and stops at the first error it returns. Malformed when the member is
// missing or not a list.
Status forEachInList(const Json& j, const char* key, const Ctx& ctx,
                     const std::function<Status(const Json&, const Ctx&)>& each);

} // namespace coli::tokjson
