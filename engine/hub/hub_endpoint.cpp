#include "hub/hub_endpoint.h"

#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace coli::hub {

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

} // namespace

Result<UrlParts> parseUrl(const std::string& url) {
    const auto bad = [&](const char* why) {
        return Status(ErrorCode::InvalidArgument, "URL '" + url + "': " + why);
    };
    const auto colon = url.find("://");
    if (colon == std::string::npos) return bad("not an absolute URL");
    UrlParts u;
    u.scheme = asciiLower(url.substr(0, colon));
    if (u.scheme != "http" && u.scheme != "https") return bad("the scheme must be http or https");
    const auto rest = url.substr(colon + 3);
    const auto slash = rest.find_first_of("/?#");
    std::string authority = rest.substr(0, slash);
    u.path = slash == std::string::npos ? "/" : rest.substr(slash);
    if (!u.path.empty() && u.path[0] != '/') u.path = "/" + u.path;
    if (const auto at = authority.rfind('@'); at != std::string::npos)
        return bad("credentials in the URL are not accepted");
    std::string portText;
    if (!authority.empty() && authority[0] == '[') {
        const auto close = authority.find(']');
        if (close == std::string::npos) return bad("unclosed '[' in the host");
        u.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') return bad("unexpected text after the host");
            portText = authority.substr(close + 2);
        }
    } else {
        const auto c = authority.find(':');
        u.host = authority.substr(0, c);
        if (c != std::string::npos) portText = authority.substr(c + 1);
    }
    u.host = asciiLower(u.host);
    if (u.host.empty()) return bad("no host");
    if (!portText.empty()) {
        if (portText.size() > 5 || !std::all_of(portText.begin(), portText.end(),
                                                [](unsigned char c) { return std::isdigit(c); }))
            return bad("the port is not a number");
        u.port = std::stoi(portText);
        if (u.port < 1 || u.port > 65535) return bad("the port is outside 1..65535");
    }
    return u;
}

std::string originOf(const UrlParts& u) {
    const int def = u.scheme == "https" ? 443 : 80;
    std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
    std::string o = u.scheme + "://" + host;
    if (u.port != 0 && u.port != def) o += ":" + std::to_string(u.port);
    return o;
}

bool isLoopbackHost(const std::string& host) {
    const std::string h = asciiLower(host);
    return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

Status checkUrlPolicy(const std::string& url) {
    auto u = parseUrl(url);
    if (!u) return u.status();
    if (u->scheme == "http" && !isLoopbackHost(u->host))
        return {ErrorCode::InvalidArgument,
                "URL '" + url + "': plain http is allowed only for a loopback address (use https)"};
    return Status::ok();
}

std::string tokenFilePath() {
    std::string home = env("HF_HOME");
    if (home.empty()) {
        const std::string userHome = env("HOME");
        home = (userHome.empty() ? std::string(".") : userHome) + "/.cache/huggingface";
    }
    return home + "/token";
}

Result<HubEndpoint> endpointFromEnvironment() {
    HubEndpoint e;
    e.base = trimAscii(env("HF_ENDPOINT"));
    if (e.base.empty()) e.base = kDefaultEndpoint;
    while (!e.base.empty() && e.base.back() == '/')
        e.base.pop_back();
    if (Status s = checkUrlPolicy(e.base); !s.isOk())
        return Status(s.code(), "HF_ENDPOINT: " + s.message());
    e.token = trimAscii(env("HF_TOKEN"));
    if (!e.token.empty()) {
        e.tokenSource = "HF_TOKEN";
    } else {
        const std::string path = tokenFilePath();
        std::ifstream in(path);
        if (in) {
            std::stringstream ss;
            ss << in.rdbuf();
            e.token = trimAscii(ss.str());
            if (!e.token.empty()) e.tokenSource = path;
        }
    }
    return e;
}

} // namespace coli::hub
