#pragma once
// What the Hub's JSON API says about models and their files (the fields huggingface_hub reads),
// in the engine's terms. Filled by hub_api.h; used by the downloader, `coli search`, `coli
// download`, `coli doctor --deep` and the app's wizard.
// Thread-safety: plain values.
#include <cstdint>
#include <string>
#include <vector>

namespace coli::hub {

// One file of a repo at one revision (from /api/models/{repo}/tree/{revision}?recursive=true).
struct RepoFile {
    std::string path;      // relative to the repo root, '/'-separated
    uint64_t size = 0;     // bytes (for LFS files: the LFS object's size, not the pointer's)
    std::string blobId;    // the git blob SHA-1 ("oid"), 40 hex digits; for an LFS file the blob
                           // is the LFS pointer, so only lfsSha256 checks its content
    std::string lfsSha256; // the LFS object's SHA-256, 64 hex digits; empty for a non-LFS file
    bool isLfs() const { return !lfsSha256.empty(); }
};

// Whether this app can run a repo, judged from what the Hub says (search results, model info)
// and, before any download, from its config.json (model::parseConfig).
enum class Support {
    Supported,               // a supported MoE family (config.json's architectures)
    UnsupportedArchitecture, // another architecture: `note` names it
    GgufOnly,                // weights only as GGUF (no safetensors, no colibri container)
    NoWeights,               // neither safetensors nor a container
    Unknown,                 // not enough information yet (e.g. search results without config)
};
const char* supportName(Support s); // "supported", "unsupported architecture", ...

// One search result (/api/models?search=...), or the summary part of a model's info.
struct ModelSummary {
    std::string id; // "owner/name"
    std::string pipelineTag;
    std::string libraryName;
    std::vector<std::string> tags;
    std::vector<std::string> architectures; // config.architectures when the API gave it
    std::string modelType;                  // config.model_type when given
    int64_t downloads = 0;
    int64_t likes = 0;
    std::string lastModified; // ISO 8601 as the Hub writes it
    bool gated = false;       // "auto" or "manual" gating: a token with access is needed
    bool isPrivate = false;
    int64_t parameters = 0; // safetensors.total when given (count), else 0
    Support support = Support::Unknown;
    std::string supportNote; // why, in words ("architecture DbrxForCausalLM is not
                             // supported (supported: ...)", "GGUF files only")
};

// /api/models/{repo}[/revision/{revision}] plus its full file tree.
struct ModelInfo {
    ModelSummary summary;
    std::string revision; // as asked ("main", a branch, a tag or a commit)
    std::string commit;   // the commit SHA the revision resolved to ("sha"); downloads pin it
    std::vector<RepoFile> files;
    uint64_t totalBytes() const {
        uint64_t n = 0;
        for (const auto& f : files)
            n += f.size;
        return n;
    }
};

} // namespace coli::hub
