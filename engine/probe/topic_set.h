#pragma once
// A topic set of the topic probe (docs/visualisation.md "Topic probe"): a fixed, documented list
// of prompts per topic, read from a JSON file of this shape (resources/topics/*.json):
//
//   {"format": "colibri-topics", "version": 1, "name": "...", "description": "...",
//    "topics": [{"id": "kjv_en", "label": "King James Bible", "source": "<a sources id>",
//                "prompts": ["...", ...]}, ...],
//    "sources": [{"id": "...", "package": "...", "version": "...", "licence": "...",
//                 "files": ["...", ...]}, ...]}
//
// Required: format, version 1, name (a string), topics (a non-empty array); per topic a unique,
// non-empty id, a non-empty label and a non-empty array of non-empty prompt strings. Optional:
// description, sources (each with a unique string id; package, version and licence strings;
// files a string or an array of strings) and a topic's source (a string naming one of the sources
// when sources are given). Unknown keys are ignored (later versions may add some). Thread-safety:
// pure functions, no shared state.
#include "core/status.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace coli::probe {

struct Topic {
    std::string id;     // short, unique within the set ("kjv_en")
    std::string label;  // for people ("King James Bible")
    std::string source; // id of a TopicSource ("" when the file gives none)
    std::vector<std::string> prompts;
};

struct TopicSource {
    std::string id, package, version, licence;
    std::vector<std::string> files; // a string in the file gives one entry
};

struct TopicSet {
    std::string file;   // the path it was read from (or the name given to parseTopicSet)
    std::string sha256; // SHA-256 of the file's bytes, 64 lowercase hex digits
    std::string name, description;
    std::vector<Topic> topics;
    std::vector<TopicSource> sources;
};

// Offset of the first byte of `text` that is not part of valid UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF); text.size() when it is all valid.
size_t firstInvalidUtf8(std::string_view text);

// Parses and checks a topic set. `file` names it in every message. Errors (Malformed, each
// message "FILE: <problem>"): bytes that are not UTF-8 (with the byte offset and line), text
// that is not JSON (with JSON's own position), a wrong "format" or "version", a missing or
// mistyped key (named with its path, e.g. "topics[3].prompts[0]"), an empty topic list, topic,
// prompt, id or label, an id given twice, a topic source that no source lists.
Result<TopicSet> parseTopicSet(std::string_view text, const std::string& file);

// Reads `path` (a regular file, at most 64 MiB: core/file_text.h) and parses it. Errors: as
// readTextFile (NotFound, Io, Malformed) and parseTopicSet.
Result<TopicSet> loadTopicSet(const std::string& path);

} // namespace coli::probe
