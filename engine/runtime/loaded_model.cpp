#include "core/file_text.h"
#include "core/regular_file.h"
#include "runtime/session.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace coli {
namespace {

// Prefixes the path when a lower layer's message does not already name the file.
Status nameFile(const Status& s, const std::string& path) {
    if (s.isOk()) return s;
    const std::string base = std::filesystem::path(path).filename().string();
    if (s.message().find(base) != std::string::npos) return s;
    return {s.code(), path + ": " + s.message()};
}

bool cancelled(const std::atomic<bool>* cancel) {
    return cancel && cancel->load(std::memory_order_relaxed);
}

Status cancelledStatus(const std::string& dir) {
    return {ErrorCode::Cancelled, dir + ": loading cancelled"};
}

// tokenizer_config.json "eos_token": a string or an AddedToken object {"content": ...}.
std::string eosTokenText(const std::string& tokenizerConfigText) {
    auto j = nlohmann::json::parse(tokenizerConfigText, nullptr, false);
    if (!j.is_object()) return {};
    const auto it = j.find("eos_token");
    if (it == j.end()) return {};
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].get<std::string>();
    return {};
}

} // namespace

struct LoadedModel::Impl {
    std::string dir;
    std::unique_ptr<Model> model;
    std::shared_ptr<const Tokenizer> tokenizer; // shared read-only (sharedTokenizer())
    std::unique_ptr<ChatTemplate> chatTemplate;
    Status templateStatus; // why chatTemplate is null
    std::vector<std::string> warnings;
    GenerationConfig generation;
};

LoadedModel::LoadedModel() : m_impl(std::make_unique<Impl>()) {}
LoadedModel::~LoadedModel() = default;

Result<std::unique_ptr<LoadedModel>> LoadedModel::load(const std::string& dir,
                                                       const ModelLoadOptions& opt,
                                                       const ProgressFn& progress,
                                                       const std::atomic<bool>* cancel) {
    auto report = [&](const std::string& stage, double fraction) {
        if (progress) progress(LoadProgress{stage, fraction});
    };
    std::error_code ec;
    COLI_RETURN_IF_ERROR(symbolicLinkProblem(dir));
    if (!std::filesystem::exists(dir, ec))
        return Status(ErrorCode::NotFound, dir + ": no such model directory");
    if (!std::filesystem::is_directory(dir, ec))
        return Status(ErrorCode::NotFound, dir + ": not a directory");

    std::unique_ptr<LoadedModel> lm(new LoadedModel());
    Impl& d = *lm->m_impl;
    d.dir = dir;

    report("config", 0.0);
    // Weights take almost all the time: give them [0.02, 0.92] of the bar.
    ProgressFn inner;
    if (progress) {
        inner = [&](const LoadProgress& p) {
            progress(LoadProgress{p.stage, 0.02 + 0.90 * std::clamp(p.fraction, 0.0, 1.0)});
        };
    }
    auto model = Model::load(dir, opt, inner, cancel);
    if (!model) return model.status();
    d.model = std::move(model.value());
    d.warnings = d.model->warnings();
    if (cancelled(cancel)) return cancelledStatus(dir);

    report("tokenizer", 0.92);
    const std::string tokPath = dir + "/tokenizer.json";
    auto tok = Tokenizer::fromFile(tokPath);
    if (!tok) return nameFile(tok.status(), tokPath);
    d.tokenizer = std::move(tok.value());
    if (cancelled(cancel)) return cancelledStatus(dir);

    report("chat template", 0.96);
    const std::string tcPath = dir + "/tokenizer_config.json";
    auto tcFile = readOptionalFile(tcPath);
    if (!tcFile) return tcFile.status();
    const std::string tcText = tcFile.value().value_or("");
    if (!tcFile.value()) {
        d.templateStatus =
            Status(ErrorCode::NotFound, tcPath + ": file not found (no chat template)");
    } else if (tcText.find_first_not_of(" \t\r\n") == std::string::npos) {
        // Not "not found": the file is there, and the user should look at it.
        d.templateStatus = Status(ErrorCode::Malformed, tcPath + ": the file is empty");
        d.warnings.push_back(d.templateStatus.message() + " (no chat template)");
    } else {
        auto ct = ChatTemplate::fromTokenizerConfig(tcPath);
        if (ct) {
            d.chatTemplate = std::move(ct.value());
        } else {
            d.templateStatus = nameFile(ct.status(), tcPath);
            // A checkpoint without a template is normal (a base model); a broken one is worth
            // saying at load, not only when a chat is attempted.
            if (d.templateStatus.code() != ErrorCode::NotFound)
                d.warnings.push_back(d.templateStatus.message() + " (no chat template)");
        }
    }

    auto gen = loadGenerationConfig(dir);
    if (!gen) return gen.status();
    d.generation = std::move(gen.value());
    d.warnings.insert(d.warnings.end(), d.generation.warnings.begin(), d.generation.warnings.end());
    if (d.generation.eosIds.empty() && !tcText.empty()) {
        // Last resort: the tokenizer's declared eos token.
        const std::string eos = eosTokenText(tcText);
        if (!eos.empty())
            if (auto id = d.tokenizer->tokenId(eos)) d.generation.eosIds.push_back(*id);
    }
    const int vocab = d.model->config().vocabSize;
    for (int32_t id : d.generation.eosIds)
        if (id >= vocab)
            return Status(ErrorCode::Malformed,
                          dir + "/generation_config.json: eos_token_id " + std::to_string(id) +
                              " outside the vocabulary (" + std::to_string(vocab) + ")");
    report("ready", 1.0);
    return lm;
}

const std::string& LoadedModel::dir() const {
    return m_impl->dir;
}
Model& LoadedModel::model() const {
    return *m_impl->model;
}
const Tokenizer& LoadedModel::tokenizer() const {
    return *m_impl->tokenizer;
}
std::shared_ptr<const Tokenizer> LoadedModel::sharedTokenizer() const {
    return m_impl->tokenizer;
}
const ChatTemplate* LoadedModel::chatTemplate() const {
    return m_impl->chatTemplate.get();
}
const GenerationConfig& LoadedModel::generationConfig() const {
    return m_impl->generation;
}
const std::vector<std::string>& LoadedModel::warnings() const {
    return m_impl->warnings;
}

Result<std::string> LoadedModel::renderChat(const std::vector<ChatMessage>& messages,
                                            bool addGenerationPrompt,
                                            const std::atomic<bool>* cancel) const {
    if (!m_impl->chatTemplate) return m_impl->templateStatus;
    return m_impl->chatTemplate->render(messages, addGenerationPrompt, std::nullopt, cancel);
}

} // namespace coli
