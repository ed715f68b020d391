#pragma once
// The Hub's JSON API as huggingface_hub uses it (docs/hub.md "The Hub API"):
//   search:     GET {endpoint}/api/models?search=TEXT&limit=N&sort=downloads&direction=-1
//               &expand[]=... (the fields ModelSummary reads: config, safetensors, siblings, ...)
//   model info: GET {endpoint}/api/models/{repo}/revision/{revision}
//   file tree:  GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true, following the
//               `Link: <...>; rel="next"` header until there is none
//   a file:     {endpoint}/{repo}/resolve/{revision}/{path} (302 to a CDN for LFS files)
// Status mapping: 401/403 -> Unauthorized ("gated or private: set HF_TOKEN ..."), 404 ->
// NotFound naming the repo/revision/file, 429 and 5xx after retries (ApiRetry) -> Network, other
// statuses -> Network naming the status; malformed JSON or a field of the wrong type -> Malformed
// naming the URL; a tree path that would leave the repo ("..", absolute) -> Malformed.
// Thread-safety: a HubApi owns an HttpClient: one thread at a time.
#include "core/status.h"
#include "hub/http_client.h"
#include "hub/hub_types.h"

#include <atomic>
#include <string>
#include <vector>

namespace coli::hub {

// {endpoint}/{repo}/resolve/{revision}/{path}: the revision percent-encoded as one segment (a
// branch "a/b" becomes "a%2Fb", as huggingface_hub quotes it), each '/'-separated segment of
// `path` percent-encoded (RFC 3986 unreserved characters kept).
std::string resolveUrl(const std::string& endpoint, const std::string& repo,
                       const std::string& revision, const std::string& path);

// Judges support from a config.json text: Supported when model::parseConfig accepts it, else
// UnsupportedArchitecture (parseConfig said Unsupported: the note names the architecture and
// why) or Unknown (not a readable config.json: the note says what is wrong). `note` may be null.
Support supportFromConfig(const std::string& configJson, std::string* note);

// Support judged from what a search result or model info says: weights first (only .gguf files
// -> GgufOnly, neither safetensors nor a colibri container -> NoWeights; from the file list when
// the result has one, else from the "gguf"/"safetensors" tags), then config.architectures
// (unknown -> UnsupportedArchitecture naming it; absent -> Unknown). Sets s.support and
// s.supportNote. `files`: the repo's file paths ("siblings"), empty when the result had none.
void judgeSupport(ModelSummary& s, const std::vector<std::string>& files);

// Retries of API requests (429, 5xx, transport errors): waits initialBackoffSeconds doubling up
// to maxBackoffSeconds (Retry-After wins, capped the same), at most maxRetries retries.
struct ApiRetry {
    int maxRetries = 4;
    double initialBackoffSeconds = 1;
    double maxBackoffSeconds = 30;
};

class HubApi {
public:
    explicit HubApi(HubEndpoint endpoint, ApiRetry retry = {});

    // Up to `limit` (1..100, else InvalidArgument) models matching `text`, most downloaded first,
    // each with `support` judged from what the result says (judgeSupport).
    Result<std::vector<ModelSummary>> search(const std::string& text, int limit = 20);
    // Info and the whole file tree of `repo` at `revision` (the commit it resolves to is in
    // ModelInfo::commit, and the tree is listed at that commit, so every file comes from one
    // commit; later requests should use it too). Folders are left out of `files`.
    Result<ModelInfo> modelInfo(const std::string& repo, const std::string& revision = "main");
    // A small file's text (config.json, tokenizer_config.json), at most maxBytes (larger:
    // Malformed naming the file).
    Result<std::string> fetchText(const std::string& repo, const std::string& revision,
                                  const std::string& path, uint64_t maxBytes = 16ull << 20);

    // Checked between retries and during transfers; true stops with Cancelled.
    void setCancel(const std::atomic<bool>* cancel) { m_cancel = cancel; }
    HttpClient& http() { return m_http; }

private:
    // GET `url` (JSON or a small text) with the retry policy; non-2xx mapped as above, `what`
    // names the object for 404s ("repository owner/name", "file config.json of owner/name").
    Result<HttpResponse> getWithRetry(const std::string& url, const std::string& what,
                                      uint64_t maxBytes = 64ull << 20);
    HttpClient m_http;
    ApiRetry m_retry;
    const std::atomic<bool>* m_cancel = nullptr;
};

} // namespace coli::hub
