#include "chat/chat_template.h"

#include "chat/jinja_eval.h"
#include "core/file_text.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace coli {

struct ChatTemplate::Impl {
    std::unique_ptr<jinja::Template> tmpl;
    std::optional<std::string> bos;
    std::optional<std::string> eos;
    // The rest of transformers' special_tokens_map (unk/sep/pad/cls/mask tokens,
    // additional_special_tokens), which apply_chat_template also passes to the template.
    jinja::Variables otherTokens;
    std::string sourceName;
};

namespace {

Status toStatus(const jinja::JinjaError& err, const std::string& source) {
    std::string where = source;
    if (err.line > 0) where += ":" + std::to_string(err.line) + ":" + std::to_string(err.column);
    std::string prefix;
    if (err.raisedByTemplate)
        prefix = "template raised an error: ";
    else if (err.code == ErrorCode::Unsupported)
        prefix = "not supported by our Jinja subset: ";
    return Status(err.code, where + ": " + prefix + err.message);
}

// bos_token/eos_token: a string, an AddedToken object {"content": ...}, null or absent.
Result<std::optional<std::string>> specialToken(const nlohmann::json& cfg, const char* key,
                                                const std::string& path) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return std::optional<std::string>();
    if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
    if (it->is_object()) {
        auto c = it->find("content");
        if (c != it->end() && c->is_string())
            return std::optional<std::string>(c->get<std::string>());
    }
    return Status(ErrorCode::Malformed, path + ": key '" + key +
                                            "' must be a string or an object with a string "
                                            "'content'");
}

} // namespace

ChatTemplate::ChatTemplate() : m_impl(std::make_unique<Impl>()) {}
ChatTemplate::~ChatTemplate() = default;

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::fromTokenizerConfig(const std::string& path) {
    Result<std::string> text = readTextFile(path);
    if (!text) return text.status();
    nlohmann::json cfg;
    try {
        cfg = nlohmann::json::parse(text.value());
    } catch (const nlohmann::json::exception& e) {
        return Status(ErrorCode::Malformed, path + ": invalid JSON: " + e.what());
    }
    if (!cfg.is_object()) return Status(ErrorCode::Malformed, path + ": not a JSON object");

    std::string templ;
    std::string source = path;
    auto it = cfg.find("chat_template");
    if (it == cfg.end() || it->is_null()) {
        // transformers >= 4.43 may save the template beside the config instead.
        std::filesystem::path side =
            std::filesystem::path(path).parent_path() / "chat_template.jinja";
        auto sideText = readOptionalFile(side.string());
        if (!sideText) return sideText.status();
        if (!sideText.value())
            return Status(ErrorCode::NotFound,
                          path + ": no 'chat_template' key (and no chat_template.jinja beside it)");
        templ = std::move(*sideText.value());
        source = side.string();
    } else if (it->is_string()) {
        templ = it->get<std::string>();
    } else if (it->is_array()) {
        bool found = false;
        for (const auto& entry : *it) {
            if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
                !entry["name"].is_string() || !entry["template"].is_string())
                return Status(ErrorCode::Malformed,
                              path + ": 'chat_template' list entries must be {\"name\": string, "
                                     "\"template\": string}");
            if (entry["name"] == "default") {
                templ = entry["template"].get<std::string>();
                found = true;
            }
        }
        if (!found)
            return Status(ErrorCode::NotFound,
                          path + ": 'chat_template' list has no entry named 'default'");
        source = path + "#default";
    } else {
        return Status(ErrorCode::Malformed,
                      path + ": 'chat_template' must be a string or a list of named templates");
    }

    auto bos = specialToken(cfg, "bos_token", path);
    if (!bos) return bos.status();
    auto eos = specialToken(cfg, "eos_token", path);
    if (!eos) return eos.status();

    std::unique_ptr<ChatTemplate> ct(new ChatTemplate());
    ct->m_impl->bos = bos.value();
    ct->m_impl->eos = eos.value();
    // special_tokens_map only lists tokens that are set (non-empty).
    for (const char* key : {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        auto tok = specialToken(cfg, key, path);
        if (!tok) return tok.status();
        if (tok.value() && !tok.value()->empty())
            ct->m_impl->otherTokens.emplace_back(key, jinja::Value(*tok.value()));
    }
    if (auto extra = cfg.find("additional_special_tokens");
        extra != cfg.end() && extra->is_array() && !extra->empty()) {
        jinja::ValueList list;
        for (const auto& t : *extra) {
            if (t.is_string()) {
                list.emplace_back(t.get<std::string>());
            } else if (t.is_object() && t.contains("content") && t["content"].is_string()) {
                list.emplace_back(t["content"].get<std::string>());
            } else {
                return Status(ErrorCode::Malformed,
                              path + ": 'additional_special_tokens' entries must be strings or "
                                     "objects with a string 'content'");
            }
        }
        ct->m_impl->otherTokens.emplace_back("additional_special_tokens",
                                             jinja::Value(std::move(list)));
    }
    ct->m_impl->sourceName = source;
    try {
        ct->m_impl->tmpl = jinja::Template::parse(templ);
    } catch (const jinja::JinjaError& err) {
        return toStatus(err, source);
    }
    return ct;
}

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::fromString(const std::string& templ,
                                                               const std::string& bosToken,
                                                               const std::string& eosToken,
                                                               const std::string& sourceName) {
    std::unique_ptr<ChatTemplate> ct(new ChatTemplate());
    ct->m_impl->bos = bosToken;
    ct->m_impl->eos = eosToken;
    ct->m_impl->sourceName = sourceName;
    try {
        ct->m_impl->tmpl = jinja::Template::parse(templ);
    } catch (const jinja::JinjaError& err) {
        return toStatus(err, sourceName);
    }
    return ct;
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         bool addGenerationPrompt) const {
    return render(messages, addGenerationPrompt, std::nullopt);
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         bool addGenerationPrompt,
                                         std::optional<bool> enableThinking) const {
    return render(messages, addGenerationPrompt, enableThinking, nullptr);
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         bool addGenerationPrompt,
                                         std::optional<bool> enableThinking,
                                         const std::atomic<bool>* cancel,
                                         const RenderLimits& limits, RenderUsage* usage) const {
    using jinja::Value;
    jinja::ValueList list;
    for (const ChatMessage& m : messages) {
        jinja::ValueDict d;
        d.set("role", Value(m.role));
        d.set("content", Value(m.content));
        list.push_back(Value::dict(std::move(d)));
    }
    jinja::Variables vars;
    vars.emplace_back("messages", Value(std::move(list)));
    vars.emplace_back("tools", Value::none());
    vars.emplace_back("documents", Value::none());
    vars.emplace_back("add_generation_prompt", Value(addGenerationPrompt));
    if (m_impl->bos) vars.emplace_back("bos_token", Value(*m_impl->bos));
    if (m_impl->eos) vars.emplace_back("eos_token", Value(*m_impl->eos));
    for (const auto& kv : m_impl->otherTokens)
        vars.push_back(kv);
    if (enableThinking) vars.emplace_back("enable_thinking", Value(*enableThinking));
    try {
        return m_impl->tmpl->render(vars, limits, cancel, usage);
    } catch (const jinja::JinjaError& err) {
        return toStatus(err, m_impl->sourceName);
    } catch (const std::bad_alloc&) {
        return Status(ErrorCode::Internal, m_impl->sourceName + ": out of memory while rendering");
    }
}

const std::string& ChatTemplate::bosToken() const {
    static const std::string empty;
    return m_impl->bos ? *m_impl->bos : empty;
}

const std::string& ChatTemplate::eosToken() const {
    static const std::string empty;
    return m_impl->eos ? *m_impl->eos : empty;
}

const std::string& ChatTemplate::sourceName() const {
    return m_impl->sourceName;
}

} // namespace coli
