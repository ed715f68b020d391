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
#include "chat/render_budget.h"
#include "core/status.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coli {

struct ChatMessage {
    std::string role; // "system", "user", "assistant"
    std::string content;
};

class ChatTemplate {
public:
    // Reads chat_template, bos_token, eos_token from tokenizer_config.json. chat_template may be
    // a string or a list of {"name", "template"} (the "default" entry is used); when the key is
    // absent, a chat_template.jinja file next to the config is used (newer transformers save the
    // template there). bos_token/eos_token may be strings or {"content": ...} objects; the other
    // special tokens transformers passes (unk/sep/pad/cls/mask_token, additional_special_tokens)
    // are read the same way and given to the template when set.
    // The whole template is parsed here, so syntax errors and unknown filters/tests surface at
    // load time, as jinja2 reports them at compile time.
    // Errors: NotFound (file, or no chat_template key and no chat_template.jinja; names the
    // file), Io (read failure), Malformed (JSON, template syntax with line:column), Unsupported
    // (construct outside the subset, naming it, with line:column).
    static Result<std::unique_ptr<ChatTemplate>> fromTokenizerConfig(const std::string& path);
    static Result<std::unique_ptr<ChatTemplate>> fromString(const std::string& templ,
                                                            const std::string& bosToken,
                                                            const std::string& eosToken,
                                                            const std::string& sourceName);
    ~ChatTemplate();

    // Renders with the variables transformers' apply_chat_template passes: messages (a list of
    // {role, content}), add_generation_prompt, bos_token, eos_token (and the other special tokens
    // of the config), tools=None, documents=None.
    // Errors (messages start with "<source>:<line>:<column>: "):
    //   InvalidArgument - raise_exception() in the template, with the template's own message
    //                     (e.g. "Conversation roles must alternate user/assistant/..."); an
    //                     undefined value used in an operation (e.g. an empty conversation where
    //                     the template reads messages[0].role);
    //                     the render's memory or operation budget exceeded (default RenderLimits,
    //                     chat/render_budget.h; the message names the limit);
    //   Malformed       - a type error while evaluating (str + int, iterating None...);
    //   Unsupported     - a function or Python method outside the supported subset.
    // Thread-safety: const; several threads may render with one ChatTemplate at once.
    Result<std::string> render(const std::vector<ChatMessage>& messages,
                               bool addGenerationPrompt) const;
    // As above; enableThinking, when set, is passed as the template variable enable_thinking
    // (Qwen3: false appends an empty <think></think> block to the generation prompt). When
    // unset the variable is undefined, as in transformers by default.
    Result<std::string> render(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                               std::optional<bool> enableThinking) const;
    // As above, interruptible and with explicit limits. cancel (may be null; may be set from any
    // thread) is polled at every operation of the render: once it is true the render stops
    // within microseconds with Cancelled. usage (may be null) receives what the render used,
    // also when it failed.
    Result<std::string> render(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                               std::optional<bool> enableThinking, const std::atomic<bool>* cancel,
                               const RenderLimits& limits = {}, RenderUsage* usage = nullptr) const;

    // "" when the config has no such token (the template then sees it as undefined).
    const std::string& bosToken() const;
    const std::string& eosToken() const;
    // The file path (or the name given to fromString) used in error messages.
    const std::string& sourceName() const;

private:
    ChatTemplate();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace coli
