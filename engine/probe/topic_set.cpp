#include "probe/topic_set.h"

#include "convert/sha256.h"
#include "core/file_text.h"

#include <nlohmann/json.hpp>

#include <set>

namespace coli::probe {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxTopicFileBytes = uint64_t(64) << 20;

std::string sha256Hex(std::string_view text) {
    convert::Sha256 h;
    h.update(text.data(), text.size());
    return h.finishHex();
}

// "line L, column C" of byte `at` (1-based; columns count bytes).
std::string position(std::string_view text, size_t at) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

struct Checker {
    const std::string& file;
    Status error;

    bool fail(const std::string& what) {
        if (error.isOk()) error = {ErrorCode::Malformed, file + ": " + what};
        return false;
    }
    // A string member; `required`: it must be there; `nonEmpty`: and not "".
    bool str(const json& obj, const char* key, const std::string& path, std::string& out,
             bool required, bool nonEmpty) {
        const auto it = obj.find(key);
        if (it == obj.end()) {
            if (required) return fail(path + "." + key + " is missing");
            return true;
        }
        if (!it->is_string()) return fail(path + "." + key + " is not a string");
        out = it->get<std::string>();
        if (nonEmpty && out.empty()) return fail(path + "." + key + " is empty");
        return true;
    }
};

} // namespace

size_t firstInvalidUtf8(std::string_view s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0;
        char32_t cp = 0, min = 0;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            len = 3, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            len = 4, cp = c & 0x07, min = 0x10000;
        else
            return i;
        if (i + size_t(len) > n) return i;
        for (int k = 1; k < len; ++k) {
            const unsigned char d = static_cast<unsigned char>(s[i + size_t(k)]);
            if ((d & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (d & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += size_t(len);
    }
    return n;
}

Result<TopicSet> parseTopicSet(std::string_view text, const std::string& file) {
    if (const size_t bad = firstInvalidUtf8(text); bad != text.size())
        return Result<TopicSet>(ErrorCode::Malformed,
                                file + ": not UTF-8 text (an invalid byte at offset " +
                                    std::to_string(bad) + ", " + position(text, bad) + ")");
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        return Result<TopicSet>(ErrorCode::Malformed, file + ": not valid JSON (" +
                                                          position(text, e.byte - 1) +
                                                          "): " + e.what());
    }
    Checker c{file, {}};
    TopicSet set;
    set.file = file;
    set.sha256 = sha256Hex(text);
    if (!j.is_object()) return Result<TopicSet>(ErrorCode::Malformed, file + ": not a JSON object");
    std::string format;
    if (!c.str(j, "format", "", format, true, false)) return c.error;
    if (format != "colibri-topics")
        return Result<TopicSet>(ErrorCode::Malformed,
                                file + ": \"format\" is \"" + format +
                                    "\", expected \"colibri-topics\" (a topic set)");
    const auto version = j.find("version");
    if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1)
        return Result<TopicSet>(ErrorCode::Malformed,
                                file + ": \"version\" must be 1 (this program reads version 1)");
    if (!c.str(j, "name", "", set.name, true, false)) return c.error;
    if (!c.str(j, "description", "", set.description, false, false)) return c.error;

    std::set<std::string> sourceIds;
    if (const auto src = j.find("sources"); src != j.end()) {
        if (!src->is_array())
            return Result<TopicSet>(ErrorCode::Malformed, file + ": .sources is not an array");
        for (size_t i = 0; i < src->size(); ++i) {
            const json& s = (*src)[i];
            const std::string path = ".sources[" + std::to_string(i) + "]";
            if (!s.is_object())
                return Result<TopicSet>(ErrorCode::Malformed,
                                        file + ": " + path + " is not an object");
            TopicSource ts;
            if (!c.str(s, "id", path, ts.id, true, true) ||
                !c.str(s, "package", path, ts.package, false, false) ||
                !c.str(s, "version", path, ts.version, false, false) ||
                !c.str(s, "licence", path, ts.licence, false, false))
                return c.error;
            if (const auto f = s.find("files"); f != s.end() && f->is_string()) {
                ts.files.push_back(f->get<std::string>()); // a description of what was taken
            } else if (f != s.end()) {
                if (!f->is_array())
                    return Result<TopicSet>(ErrorCode::Malformed,
                                            file + ": " + path +
                                                ".files is neither a string nor an array");
                for (const json& name : *f) {
                    if (!name.is_string())
                        return Result<TopicSet>(ErrorCode::Malformed,
                                                file + ": " + path + ".files has a non-string");
                    ts.files.push_back(name.get<std::string>());
                }
            }
            if (!sourceIds.insert(ts.id).second)
                return Result<TopicSet>(ErrorCode::Malformed, file + ": " + path + ".id \"" +
                                                                  ts.id + "\" is given twice");
            set.sources.push_back(std::move(ts));
        }
    }

    const auto topics = j.find("topics");
    if (topics == j.end())
        return Result<TopicSet>(ErrorCode::Malformed, file + ": .topics is missing");
    if (!topics->is_array())
        return Result<TopicSet>(ErrorCode::Malformed, file + ": .topics is not an array");
    if (topics->empty())
        return Result<TopicSet>(ErrorCode::Malformed, file + ": .topics is empty (no topic)");
    std::set<std::string> ids;
    for (size_t i = 0; i < topics->size(); ++i) {
        const json& t = (*topics)[i];
        const std::string path = ".topics[" + std::to_string(i) + "]";
        if (!t.is_object())
            return Result<TopicSet>(ErrorCode::Malformed, file + ": " + path + " is not an object");
        Topic topic;
        if (!c.str(t, "id", path, topic.id, true, true) ||
            !c.str(t, "label", path, topic.label, true, true) ||
            !c.str(t, "source", path, topic.source, false, false))
            return c.error;
        if (!ids.insert(topic.id).second)
            return Result<TopicSet>(ErrorCode::Malformed,
                                    file + ": " + path + ".id \"" + topic.id + "\" is given twice");
        if (!topic.source.empty() && !set.sources.empty() && !sourceIds.count(topic.source))
            return Result<TopicSet>(ErrorCode::Malformed,
                                    file + ": " + path + ".source \"" + topic.source +
                                        "\" is not the id of any entry of .sources");
        const auto prompts = t.find("prompts");
        if (prompts == t.end())
            return Result<TopicSet>(ErrorCode::Malformed,
                                    file + ": " + path + ".prompts is missing");
        if (!prompts->is_array())
            return Result<TopicSet>(ErrorCode::Malformed,
                                    file + ": " + path + ".prompts is not an array");
        if (prompts->empty())
            return Result<TopicSet>(ErrorCode::Malformed, file + ": topic \"" + topic.id + "\" (" +
                                                              path + ") has no prompts");
        for (size_t k = 0; k < prompts->size(); ++k) {
            const json& p = (*prompts)[k];
            const std::string at = path + ".prompts[" + std::to_string(k) + "]";
            if (!p.is_string())
                return Result<TopicSet>(ErrorCode::Malformed,
                                        file + ": " + at + " is not a string");
            std::string prompt = p.get<std::string>();
            if (prompt.find_first_not_of(" \t\r\n") == std::string::npos)
                return Result<TopicSet>(ErrorCode::Malformed, file + ": " + at + " is empty");
            topic.prompts.push_back(std::move(prompt));
        }
        set.topics.push_back(std::move(topic));
    }
    return set;
}

Result<TopicSet> loadTopicSet(const std::string& path) {
    Result<std::string> text = readTextFile(path, kMaxTopicFileBytes);
    if (!text) return text.status();
    return parseTopicSet(*text, path);
}

} // namespace coli::probe
