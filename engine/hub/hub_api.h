#pragma once
// The Hub's JSON API as huggingface_hub uses it (docs/hub.md):
//   search:     GET {endpoint}/api/models?search=TEXT&limit=N&full=true&config=true
//   model info: GET {endpoint}/api/models/{repo}/revision/{revision}
//   file tree:  GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true, following the
//               `Link: <...>; rel="next"` header until there is none
//   a file:     {endpoint}/{repo}/resolve/{revision}/{path} (302 to a CDN for LFS files)
// Status mapping: 401/403 -> Unauthorized ("gated or private: set HF_TOKEN ..."), 404 ->
// NotFound naming the repo/revision/file, 429 and 5xx after retries -> Network; malformed JSON ->
// Malformed naming the URL.
// Thread-safety: a HubApi owns an HttpClient: one thread at a time.
#include "core/status.h"
#include "hub/http_client.h"
#include "hub/hub_types.h"

#include <string>
#include <vector>

namespace coli::hub {

// {endpoint}/{repo}/resolve/{revision}/{path}, each path segment percent-encoded.
std::string resolveUrl(const std::string& endpoint, const std::string& repo,
                       const std::string& revision, const std::string& path);

// Judges support from a config.json text: Supported when model::parseConfig accepts it, else
// UnsupportedArchitecture with the architecture's name and the reason in `note`.
Support supportFromConfig(const std::string& configJson, std::string* note);

class HubApi {
public:
    explicit HubApi(HubEndpoint endpoint);

    // Up to `limit` (1..100) models matching `text`, most downloaded first, each with `support`
    // judged from what the result says (architectures, GGUF-only file lists).
    Result<std::vector<ModelSummary>> search(const std::string& text, int limit = 20);
    // Info and the whole file tree of `repo` at `revision` (the commit it resolves to is in
    // ModelInfo::commit; later requests should use it so every file comes from one commit).
    Result<ModelInfo> modelInfo(const std::string& repo, const std::string& revision = "main");
    // A small file's text (config.json, tokenizer_config.json), at most maxBytes.
    Result<std::string> fetchText(const std::string& repo, const std::string& revision,
                                  const std::string& path, uint64_t maxBytes = 16ull << 20);

    HttpClient& http() { return m_http; }

private:
    HttpClient m_http;
};

} // namespace coli::hub
