#pragma once
// HTTP GET over libcurl for the Hub client and the downloader: one request at a time per
// HttpClient, redirects followed here (not by curl) so that the Authorization header goes only to
// the endpoint's own origin (an LFS file's 302 to a CDN host is fetched without it, as
// huggingface_hub does), every hop checked against checkUrlPolicy (https, or http on loopback),
// TLS peers and host names always verified (CA bundle: $CURL_CA_BUNDLE when set, else the
// system's), identity encoding (no compression: byte offsets of a resumed file must be the
// file's), a stall (below lowSpeedBytesPerSecond for lowSpeedSeconds) ends the transfer with
// Network, and cancellation is checked between chunks.
// Thread-safety: one HttpClient per thread (it owns a curl easy handle). Distinct clients may run
// at once. curl_global_init runs once, thread-safely, on first use.
#include "core/status.h"
#include "hub/hub_endpoint.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace coli::hub {

struct HttpRequest {
    std::string url; // absolute
    // Extra request headers ("Range", "If-Range", ...). Never put Authorization here: the client
    // adds it for the endpoint's origin when the endpoint has a token and sendToken is true.
    std::vector<std::pair<std::string, std::string>> headers;
    bool sendToken = true;
    int maxRedirects = 10;
    double connectTimeoutSeconds = 30;
    long lowSpeedBytesPerSecond = 1024;        // a stall: below this ...
    long lowSpeedSeconds = 30;                 // ... for this long (0 = never a stall)
    const std::atomic<bool>* cancel = nullptr; // true: the transfer stops with Cancelled
};

// The final response (after redirects). Header names are lower-case; a repeated header keeps
// its last value.
struct HttpResponse {
    long status = 0;
    std::string url; // the URL that answered (after redirects)
    std::map<std::string, std::string> headers;
    std::string body;       // the body when no sink was given (else empty)
    uint64_t bodyBytes = 0; // body bytes received from the final response
    int redirects = 0;      // hops followed
    std::string header(const std::string& lowerName) const {
        auto it = headers.find(lowerName);
        return it == headers.end() ? std::string() : it->second;
    }
};

// Receives the final response's body in pieces; `head` has its status and headers (complete
// before the first call). Return false to abort the transfer (the get() then returns the Status
// the sink stored through its own means, see HttpClient::get). Not called for redirects' bodies.
using BodySink = std::function<bool(const HttpResponse& head, const char* data, size_t n)>;

class HttpClient {
public:
    explicit HttpClient(HubEndpoint endpoint);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    const HubEndpoint& endpoint() const { return m_endpoint; }

    // GET `request.url`, following redirects (301, 302, 303, 307, 308; relative Location
    // resolved). Without a sink the body is collected in HttpResponse::body (up to maxBodyBytes,
    // then InvalidArgument: use a sink for files). Any HTTP status is a successful Result (the
    // caller decides what 404 or 429 means); errors are transport-level: Network (connection
    // refused or reset, timeout, a stall, TLS failure, too many redirects, body shorter than
    // Content-Length), InvalidArgument (URL refused by the policy, naming it), Cancelled,
    // and Io when the sink returned false (abortReason, when set by the sink, is returned as is).
    Result<HttpResponse> get(const HttpRequest& request, const BodySink& sink = {},
                             uint64_t maxBodyBytes = 64ull << 20);

    // A sink that fails sets this to say why (e.g. NoSpace writing a .part); get() returns it.
    void setAbortReason(Status reason) { m_abortReason = std::move(reason); }

private:
    struct Curl;
    HubEndpoint m_endpoint;
    std::string m_endpointOrigin;
    std::unique_ptr<Curl> m_curl;
    Status m_abortReason;
};

// True for the Network error get() returns when the server's TLS certificate (or its host name)
// could not be verified: a retry cannot fix it, unlike a dropped connection.
bool isCertificateFailure(const Status& s);

// "Mon, 01 Jan 2024 00:00:00 GMT" or a number of seconds -> seconds to wait (>= 0); -1 when
// the value cannot be read. `nowUnix` is the current time (seconds since the epoch).
double parseRetryAfter(const std::string& value, double nowUnix);

} // namespace coli::hub
