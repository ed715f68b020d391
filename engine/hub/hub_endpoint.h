#pragma once
// Where the Hugging Face Hub is and who we are to it, as huggingface_hub decides it:
//   endpoint: $HF_ENDPOINT, else https://huggingface.co (trailing '/' dropped);
//   token:    $HF_TOKEN, else the file $HF_HOME/token (HF_HOME defaults to ~/.cache/huggingface),
//             whitespace trimmed; empty when there is none. (The app may add one from the OS
//             keychain: app/hub_token.*.)
// Policy: https always (certificates verified, CA bundle from $CURL_CA_BUNDLE when set); plain
// http only for a loopback host (127.0.0.0/8, ::1, localhost), so tests can run a local server.
// The token is never logged and never sent to another origin than the endpoint's (see
// http_client.h: redirects to a CDN go without it).
// Thread-safety: plain values and pure functions (environment reads aside).
#include "core/status.h"

#include <string>

namespace coli::hub {

constexpr const char* kDefaultEndpoint = "https://huggingface.co";

// The parts of an absolute URL this code needs. Lower-case scheme and host; port 0 = the
// scheme's default.
struct UrlParts {
    std::string scheme; // "https" or "http"
    std::string host;   // without brackets for IPv6
    int port = 0;
    std::string path; // from the first '/' (with the query), "/" when absent
};
// Errors: InvalidArgument naming the URL (not absolute, unknown scheme, bad port).
Result<UrlParts> parseUrl(const std::string& url);
// "https://host[:port]" with the default port left out, for origin comparisons.
std::string originOf(const UrlParts& u);
bool isLoopbackHost(const std::string& host);
// OK when `url` may be fetched under the policy above; InvalidArgument naming the URL otherwise
// ("plain http is allowed only for a loopback address").
Status checkUrlPolicy(const std::string& url);

struct HubEndpoint {
    std::string base;        // e.g. "https://huggingface.co", no trailing '/'
    std::string token;       // empty: anonymous. Never print it.
    std::string tokenSource; // "HF_TOKEN", the token file's path, "keychain", or "" (none)
};

// The endpoint and token from the environment (above). Errors: InvalidArgument when HF_ENDPOINT
// is not an allowed URL (checkUrlPolicy); an unreadable token file is ignored (no token).
Result<HubEndpoint> endpointFromEnvironment();

// The token file huggingface_hub uses: $HF_HOME/token, default ~/.cache/huggingface/token.
std::string tokenFilePath();

} // namespace coli::hub
