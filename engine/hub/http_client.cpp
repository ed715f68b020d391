#include "hub/http_client.h"

#include <curl/curl.h>

#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace coli::hub {

namespace {

std::once_flag g_curlInit;

constexpr const char* kCertificateFailure = "TLS: the server's certificate could not be verified (";

bool isRedirect(long status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// The state of one hop, shared with curl's callbacks.
struct Hop {
    HttpResponse head;
    const BodySink* sink = nullptr;
    uint64_t maxBody = 0;
    bool overLimit = false;
    bool sinkRefused = false;
    const std::atomic<bool>* cancel = nullptr;
};

size_t onHeader(char* data, size_t size, size_t n, void* user) {
    auto* hop = static_cast<Hop*>(user);
    const std::string line(data, size * n);
    if (line.rfind("HTTP/", 0) == 0) { // a new response (after a 1xx, or the first)
        hop->head.headers.clear();
        const auto sp = line.find(' ');
        hop->head.status = sp == std::string::npos ? 0 : std::atol(line.c_str() + sp + 1);
        return size * n;
    }
    const auto colon = line.find(':');
    if (colon != std::string::npos)
        hop->head.headers[asciiLower(trimAscii(line.substr(0, colon)))] =
            trimAscii(line.substr(colon + 1));
    return size * n;
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
    auto* hop = static_cast<Hop*>(user);
    const size_t bytes = size * n;
    if (isRedirect(hop->head.status)) return bytes; // a redirect's own body: dropped
    hop->head.bodyBytes += bytes;
    if (hop->sink != nullptr && *hop->sink) {
        if (!(*hop->sink)(hop->head, data, bytes)) {
            hop->sinkRefused = true;
            return CURL_WRITEFUNC_ERROR;
        }
        return bytes;
    }
    if (hop->head.body.size() + bytes > hop->maxBody) {
        hop->overLimit = true;
        return CURL_WRITEFUNC_ERROR;
    }
    hop->head.body.append(data, bytes);
    return bytes;
}

int onProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* hop = static_cast<Hop*>(user);
    return hop->cancel != nullptr && hop->cancel->load() ? 1 : 0;
}

} // namespace

struct HttpClient::Curl {
    CURL* handle = nullptr;
    ~Curl() {
        if (handle) curl_easy_cleanup(handle);
    }
};

HttpClient::HttpClient(HubEndpoint endpoint)
    : m_endpoint(std::move(endpoint)), m_curl(std::make_unique<Curl>()) {
    std::call_once(g_curlInit, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    m_curl->handle = curl_easy_init();
    if (auto u = parseUrl(m_endpoint.base)) m_endpointOrigin = originOf(*u);
}

HttpClient::~HttpClient() = default;

Result<HttpResponse> HttpClient::get(const HttpRequest& request, const BodySink& sink,
                                     uint64_t maxBodyBytes) {
    if (m_curl->handle == nullptr) return Status(ErrorCode::Internal, "curl_easy_init failed");
    std::string url = request.url;
    for (int hopIndex = 0;; ++hopIndex) {
        if (Status s = checkUrlPolicy(url); !s.isOk()) return s;
        auto parts = parseUrl(url);
        if (!parts) return parts.status();
        const bool sameOrigin = !m_endpointOrigin.empty() && originOf(*parts) == m_endpointOrigin;

        CURL* c = m_curl->handle;
        curl_easy_reset(c);
        Hop hop;
        hop.sink = &sink;
        hop.maxBody = maxBodyBytes;
        hop.cancel = request.cancel;
        curl_slist* headers = nullptr;
        headers = curl_slist_append(headers, "Accept-Encoding: identity");
        for (const auto& [name, value] : request.headers)
            headers = curl_slist_append(headers, (name + ": " + value).c_str());
        if (request.sendToken && sameOrigin && !m_endpoint.token.empty())
            headers =
                curl_slist_append(headers, ("Authorization: Bearer " + m_endpoint.token).c_str());
        curl_easy_setopt(c, CURLOPT_URL, url.c_str());
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        if (const char* ca = std::getenv("CURL_CA_BUNDLE"); ca != nullptr && *ca != '\0')
            curl_easy_setopt(c, CURLOPT_CAINFO, ca);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "colibri-desktop (huggingface_hub-compatible)");
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                         long(std::max(1.0, request.connectTimeoutSeconds * 1000)));
        if (request.lowSpeedSeconds > 0) {
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, request.lowSpeedBytesPerSecond);
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, request.lowSpeedSeconds);
        }
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &hop);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &hop);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onProgress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &hop);
        m_abortReason = Status::ok();
        const CURLcode rc = curl_easy_perform(c);
        char* redirect = nullptr;
        curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &redirect);
        const std::string next = redirect ? std::string(redirect) : std::string();
        curl_slist_free_all(headers);

        const std::string where = " (" + url + ")";
        if (rc != CURLE_OK) {
            if (rc == CURLE_ABORTED_BY_CALLBACK)
                return Status(ErrorCode::Cancelled, "download cancelled" + where);
            if (rc == CURLE_WRITE_ERROR && hop.overLimit)
                return Status(ErrorCode::InvalidArgument, "the response is larger than " +
                                                              std::to_string(maxBodyBytes) +
                                                              " bytes" + where);
            if (rc == CURLE_WRITE_ERROR && hop.sinkRefused)
                return m_abortReason.isOk()
                           ? Status(ErrorCode::Io, "writing the body failed" + where)
                           : m_abortReason;
            if (rc == CURLE_OPERATION_TIMEDOUT)
                return Status(ErrorCode::Network,
                              hop.head.status != 0 // the answer began, then stopped
                                  ? "the transfer stalled (under " +
                                        std::to_string(request.lowSpeedBytesPerSecond) +
                                        " bytes/s for " + std::to_string(request.lowSpeedSeconds) +
                                        " s) after " + std::to_string(hop.head.bodyBytes) +
                                        " bytes" + where
                                  : "the server did not answer in time (no connection within " +
                                        std::to_string(int(request.connectTimeoutSeconds)) +
                                        " s, or no response for " +
                                        std::to_string(request.lowSpeedSeconds) + " s)" + where);
            if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
                return Status(ErrorCode::Network,
                              std::string(kCertificateFailure) + curl_easy_strerror(rc) +
                                  "; a private CA can be given with CURL_CA_BUNDLE)" + where);
            if (rc == CURLE_SSL_CONNECT_ERROR)
                return Status(ErrorCode::Network, std::string("TLS: the handshake failed (") +
                                                      curl_easy_strerror(rc) + ")" + where);
            if (rc == CURLE_PARTIAL_FILE)
                return Status(ErrorCode::Network, "the connection closed after " +
                                                      std::to_string(hop.head.bodyBytes) +
                                                      " bytes of the body" + where);
            return Status(ErrorCode::Network, std::string(curl_easy_strerror(rc)) + where);
        }
        hop.head.url = url;
        hop.head.redirects = hopIndex;
        if (!isRedirect(hop.head.status)) return hop.head;
        if (next.empty())
            return Status(ErrorCode::Network, "HTTP " + std::to_string(hop.head.status) +
                                                  " without a Location header" + where);
        if (hopIndex >= request.maxRedirects)
            return Status(ErrorCode::Network, "more than " + std::to_string(request.maxRedirects) +
                                                  " redirects" + where);
        url = next;
    }
}

bool isCertificateFailure(const Status& s) {
    return s.code() == ErrorCode::Network && s.message().rfind(kCertificateFailure, 0) == 0;
}

double parseRetryAfter(const std::string& value, double nowUnix) {
    const std::string v = trimAscii(value);
    if (v.empty()) return -1;
    if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }))
        return v.size() > 9 ? -1 : double(std::atol(v.c_str()));
    const time_t when = curl_getdate(v.c_str(), nullptr);
    if (when < 0) return -1;
    return std::max(0.0, double(when) - nowUnix);
}

} // namespace coli::hub
