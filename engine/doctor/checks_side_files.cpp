// The files beside the weights the engine loads with them (runtime/session.h, LoadedModel::load):
// tokenizer.json (required), tokenizer_config.json's chat template (chat only; never replaced by
// another family's), generation_config.json (optional, but refused when malformed).
#include "chat/chat_template.h"
#include "core/file_text.h"
#include "doctor/doctor_context.h"
#include "runtime/generation_config.h"
#include "tokenizer/tokenizer.h"

namespace coli::doctor::detail {
namespace {

void checkTokenizer(Context& c) {
    const std::string file = "tokenizer.json";
    if (c.isBroken(file)) return;
    c.step("checking", file);
    auto tok = Tokenizer::fromFile(c.path(file));
    if (tok) {
        if (c.config && tok.value()->vocabSize() > c.config->vocabSize)
            c.add(Severity::Warning, file,
                  "the tokenizer has " + grouped(uint64_t(tok.value()->vocabSize())) +
                      " tokens, config.json's vocab_size is " +
                      grouped(uint64_t(c.config->vocabSize)) +
                      ": text using the extra tokens cannot be run",
                  "check that tokenizer.json and config.json come from the same model");
        return;
    }
    const Status& s = tok.status();
    c.add(Severity::Error, file,
          s.code() == ErrorCode::NotFound && s.message().find("dangling") == std::string::npos
              ? "missing: text cannot be turned into tokens without it"
              : "cannot be loaded: " + c.bare(s.message(), file),
          s.code() == ErrorCode::Unsupported
              ? "this tokenizer kind is not supported (docs/tokenizer.md); the model cannot be run"
              : c.replaceAction(file));
}

void checkChatTemplate(Context& c) {
    const std::string file = "tokenizer_config.json";
    if (c.isBroken(file)) return;
    c.step("checking", file);
    const Severity sev = c.options.requireChatTemplate ? Severity::Error : Severity::Warning;
    const std::string chatNeeds = "coli chat and the app's chat need the template the model was "
                                  "trained with (coli generate works without one); ";
    const std::string fromPublisher =
        "take tokenizer_config.json (with its chat_template) or chat_template.jinja from the "
        "model's publisher; no other family's template is used in its place";
    auto text = readOptionalFile(c.path(file));
    if (!text) {
        c.add(sev, file, c.bare(text.status().message(), file), c.replaceAction(file));
        return;
    }
    if (!text.value()) {
        c.add(sev, file, "missing, so the model has no chat template", chatNeeds + fromPublisher);
        return;
    }
    if (text.value()->find_first_not_of(" \t\r\n") == std::string::npos) {
        c.add(sev, file, "the file is empty, so the model has no chat template",
              c.replaceAction(file));
        return;
    }
    auto ct = ChatTemplate::fromTokenizerConfig(c.path(file));
    if (ct) {
        c.report.chatTemplate = true;
        return;
    }
    const Status& s = ct.status();
    if (s.code() == ErrorCode::NotFound) {
        c.add(sev, file, "no chat template: " + c.bare(s.message(), file),
              chatNeeds + fromPublisher);
    } else if (s.code() == ErrorCode::Unsupported) {
        c.add(sev, file, "the chat template cannot be used: " + c.bare(s.message(), file),
              "this template uses a construct the engine does not render yet "
              "(docs/chat-templates.md); coli generate works without it");
    } else {
        c.add(sev, file, "the chat template cannot be loaded: " + c.bare(s.message(), file),
              c.replaceAction(file));
    }
}

void checkGenerationConfig(Context& c) {
    const std::string file = "generation_config.json";
    if (c.isBroken(file) || c.isBroken("config.json")) return;
    c.step("checking", file);
    auto gen = loadGenerationConfig(c.dir);
    if (!gen) {
        c.add(Severity::Error, file, c.bare(gen.status().message(), file),
              c.replaceAction(file) + ", or remove it (it is optional)");
        return;
    }
    for (const std::string& w : gen.value().warnings)
        c.add(Severity::Warning, file, c.bare(w, file),
              "the engine ignores that key and uses its own default");
    if (!c.config) return;
    for (int32_t id : gen.value().eosIds)
        if (id >= c.config->vocabSize) {
            c.add(Severity::Error, file,
                  "eos_token_id " + std::to_string(id) + " is outside the vocabulary (" +
                      std::to_string(c.config->vocabSize) + " tokens)",
                  c.replaceAction(file) + ", or remove it (it is optional)");
            return;
        }
}

} // namespace

void checkSideFiles(Context& c) {
    checkTokenizer(c);
    if (c.cancelled()) return;
    checkChatTemplate(c);
    if (c.cancelled()) return;
    checkGenerationConfig(c);
}

} // namespace coli::doctor::detail
