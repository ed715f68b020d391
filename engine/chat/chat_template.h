#pragma once
// Chat templates from `tokenizer_config.json` ("chat_template": a Jinja2 string, or a list of
// {name, template} where "default" is used). Rendered by our own interpreter of the Jinja subset
// these families' templates use (for, if/elif/else, set, namespace(), macros-free expressions,
// filters: trim, length, tojson, string, default, first/last..., string methods startswith/
// endswith/strip/split/replace, loop.*, raise_exception). Output must be byte-identical to Python
// jinja2 with transformers' settings (trim_blocks=True, lstrip_blocks=True).
// A template that uses something outside the subset is a clear error naming the construct and the
// file, never a silent fallback to another family's format.
// Thread-safety: immutable after load; render() is const.
#include "core/status.h"

#include <memory>
#include <string>
#include <vector>

namespace coli {

struct ChatMessage {
    std::string role;    // "system", "user", "assistant"
    std::string content;
};

class ChatTemplate {
public:
    // Reads chat_template, bos_token, eos_token from tokenizer_config.json.
    // Errors: NotFound (file, or no chat_template key), Malformed (JSON, template syntax with
    // line:column), Unsupported (construct outside the subset).
    static Result<std::unique_ptr<ChatTemplate>> fromTokenizerConfig(const std::string& path);
    static Result<std::unique_ptr<ChatTemplate>> fromString(const std::string& templ,
                                                            const std::string& bosToken,
                                                            const std::string& eosToken,
                                                            const std::string& sourceName);
    ~ChatTemplate();

    // Errors: Malformed/Unsupported from evaluation, InvalidArgument for raise_exception() calls
    // in the template (e.g. "Conversation roles must alternate"), with the template's message.
    Result<std::string> render(const std::vector<ChatMessage>& messages,
                               bool addGenerationPrompt) const;

private:
    ChatTemplate();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace coli
