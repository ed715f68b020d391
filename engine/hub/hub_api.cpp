#include "hub/hub_api.h"

#include "model/config.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>

namespace coli::hub {

namespace {

using nlohmann::json;

bool unreserved(unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

std::string percentEncode(const std::string& s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (unreserved(c)) {
            out += char(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

// Each '/'-separated segment encoded, the separators kept.
std::string encodePath(const std::string& path) {
    std::string out;
    size_t start = 0;
    while (true) {
        const size_t slash = path.find('/', start);
        out += percentEncode(path.substr(start, slash - start));
        if (slash == std::string::npos) break;
        out += '/';
        start = slash + 1;
    }
    return out;
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool retryable(long status) {
    return status == 429 || (status >= 500 && status <= 599);
}

// The status and the Hub's own words when it gives them (X-Error-Message).
std::string hubSays(const HttpResponse& r) {
    const std::string m = r.header("x-error-message");
    return "HTTP " + std::to_string(r.status) + (m.empty() ? std::string() : ": " + m);
}

Status statusFor(const HttpResponse& r, const std::string& url, const std::string& what) {
    if (r.status == 401 || r.status == 403)
        return {ErrorCode::Unauthorized,
                what + ": gated or private (" + hubSays(r) +
                    "): set HF_TOKEN (or log in with `hf auth login`) to a token with access"};
    if (r.status == 404) {
        const std::string code = r.header("x-error-code");
        std::string kind = "not found";
        if (code == "RevisionNotFound")
            kind = "revision not found";
        else if (code == "EntryNotFound")
            kind = "file not found";
        else if (code == "RepoNotFound")
            kind = "repository not found";
        return {ErrorCode::NotFound, what + ": " + kind + " on the Hub (" + url + ")"};
    }
    return {ErrorCode::Network, what + ": the Hub answered " + hubSays(r) + " (" + url + ")"};
}

// The "next" target of a Link header (RFC 8288), "" when there is none.
std::string nextLink(const std::string& link) {
    size_t pos = 0;
    while (pos < link.size()) {
        const size_t lt = link.find('<', pos);
        if (lt == std::string::npos) break;
        const size_t gt = link.find('>', lt);
        if (gt == std::string::npos) break;
        const size_t comma = link.find(',', gt);
        const std::string params =
            link.substr(gt + 1, comma == std::string::npos ? std::string::npos : comma - gt - 1);
        if (params.find("rel=\"next\"") != std::string::npos ||
            params.find("rel=next") != std::string::npos)
            return link.substr(lt + 1, gt - lt - 1);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return {};
}

std::string str(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t num(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// The summary part of a search result or model info; `files` gets the siblings' names.
ModelSummary summaryFrom(const json& j, std::vector<std::string>* files) {
    ModelSummary s;
    s.id = str(j, "id");
    if (s.id.empty()) s.id = str(j, "modelId");
    s.pipelineTag = str(j, "pipeline_tag");
    s.libraryName = str(j, "library_name");
    if (auto t = j.find("tags"); t != j.end() && t->is_array())
        for (const auto& tag : *t)
            if (tag.is_string()) s.tags.push_back(tag.get<std::string>());
    if (auto c = j.find("config"); c != j.end() && c->is_object()) {
        if (auto a = c->find("architectures"); a != c->end() && a->is_array())
            for (const auto& arch : *a)
                if (arch.is_string()) s.architectures.push_back(arch.get<std::string>());
        s.modelType = str(*c, "model_type");
    }
    s.downloads = num(j, "downloads");
    s.likes = num(j, "likes");
    s.lastModified = str(j, "lastModified");
    if (auto g = j.find("gated"); g != j.end())
        s.gated = g->is_string() || (g->is_boolean() && g->get<bool>());
    if (auto p = j.find("private"); p != j.end() && p->is_boolean()) s.isPrivate = p->get<bool>();
    if (auto st = j.find("safetensors"); st != j.end() && st->is_object())
        s.parameters = num(*st, "total");
    if (auto sib = j.find("siblings"); sib != j.end() && sib->is_array())
        for (const auto& f : *sib)
            if (f.is_object() && !str(f, "rfilename").empty())
                files->push_back(str(f, "rfilename"));
    return s;
}

// A repo path this code will join to a folder: relative, no "." or ".." segment, no NUL or
// backslash (a repo is served by a third party: its paths must not leave the download folder).
bool safeRepoPath(const std::string& p) {
    if (p.empty() || p[0] == '/' || p.find('\\') != std::string::npos ||
        p.find('\0') != std::string::npos)
        return false;
    size_t start = 0;
    while (true) {
        const size_t slash = p.find('/', start);
        const std::string seg = p.substr(start, slash - start);
        if (seg.empty() || seg == "." || seg == "..") return false;
        if (slash == std::string::npos) return true;
        start = slash + 1;
    }
}

bool isHex(const std::string& s, size_t n) {
    return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

const char* supportName(Support s) {
    switch (s) {
    case Support::Supported:
        return "supported";
    case Support::UnsupportedArchitecture:
        return "unsupported architecture";
    case Support::GgufOnly:
        return "GGUF only";
    case Support::NoWeights:
        return "no safetensors weights";
    case Support::Unknown:
        return "unknown";
    }
    return "unknown";
}

std::string resolveUrl(const std::string& endpoint, const std::string& repo,
                       const std::string& revision, const std::string& path) {
    return endpoint + "/" + repo + "/resolve/" + percentEncode(revision) + "/" + encodePath(path);
}

Support supportFromConfig(const std::string& configJson, std::string* note) {
    auto cfg = parseConfig(configJson, "config.json");
    std::string why;
    Support s = Support::Supported;
    if (!cfg.isOk()) {
        if (cfg.status().code() == ErrorCode::Unsupported) {
            s = Support::UnsupportedArchitecture;
            const json j = json::parse(configJson, nullptr, false);
            std::string arch;
            if (j.is_object())
                if (auto a = j.find("architectures");
                    a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string())
                    arch = (*a)[0].get<std::string>();
            Family f;
            if (!arch.empty() && !familyFromArchitecture(arch, &f))
                why = "architecture " + arch +
                      " is not supported (supported: " + supportedArchitectures() + ")";
            else
                why = (arch.empty() ? std::string("the model") : "architecture " + arch) +
                      " is configured in a way this app does not run: " + cfg.status().message();
        } else {
            s = Support::Unknown;
            why = cfg.status().message();
        }
    }
    if (note) *note = why;
    return s;
}

void judgeSupport(ModelSummary& s, const std::vector<std::string>& files) {
    bool safetensors = false, gguf = false, container = false;
    if (!files.empty()) {
        for (const auto& f : files) {
            safetensors = safetensors || endsWith(f, ".safetensors");
            gguf = gguf || endsWith(f, ".gguf");
            container = container || f == "colibri.json";
        }
    } else {
        for (const auto& t : s.tags) {
            safetensors = safetensors || t == "safetensors";
            gguf = gguf || t == "gguf";
        }
        if (!safetensors && !gguf && s.parameters > 0) safetensors = true; // safetensors metadata
    }
    if (!safetensors && !container && gguf) {
        s.support = Support::GgufOnly;
        s.supportNote = "GGUF files only (this app reads safetensors)";
        return;
    }
    if (!safetensors && !container && !files.empty()) {
        s.support = Support::NoWeights;
        s.supportNote = "no safetensors weights";
        return;
    }
    if (s.architectures.empty()) {
        s.support = Support::Unknown;
        s.supportNote = "no config in the Hub's answer";
        return;
    }
    Family f;
    if (!familyFromArchitecture(s.architectures[0], &f)) {
        s.support = Support::UnsupportedArchitecture;
        s.supportNote = "architecture " + s.architectures[0] + " is not supported";
        return;
    }
    s.support = Support::Supported;
    s.supportNote.clear();
}

HubApi::HubApi(HubEndpoint endpoint, ApiRetry retry)
    : m_http(std::move(endpoint)), m_retry(retry) {}

Result<HttpResponse> HubApi::getWithRetry(const std::string& url, const std::string& what,
                                          uint64_t maxBytes) {
    double backoff = m_retry.initialBackoffSeconds;
    Status last;
    for (int attempt = 0;; ++attempt) {
        if (m_cancel && m_cancel->load()) return Status(ErrorCode::Cancelled, what + ": cancelled");
        HttpRequest req;
        req.url = url;
        req.cancel = m_cancel;
        auto r = m_http.get(req, {}, maxBytes);
        double wait = backoff;
        if (r.isOk()) {
            const HttpResponse& resp = r.value();
            if (resp.status >= 200 && resp.status < 300) return r;
            last = statusFor(resp, url, what);
            if (!retryable(resp.status)) return last;
            const double after =
                parseRetryAfter(resp.header("retry-after"), double(std::time(nullptr)));
            if (after >= 0) wait = after;
        } else {
            if (r.status().code() != ErrorCode::Network) {
                if (r.status().code() == ErrorCode::InvalidArgument &&
                    r.status().message().find("larger than") != std::string::npos)
                    return Status(ErrorCode::Malformed,
                                  what + ": larger than " + std::to_string(maxBytes) + " bytes");
                return r.status();
            }
            last = Status(ErrorCode::Network, what + ": " + r.status().message());
        }
        if (attempt >= m_retry.maxRetries) return last;
        wait = std::min(wait, m_retry.maxBackoffSeconds);
        // Sleep in short steps so a cancel is seen.
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(int64_t(std::max(0.0, wait) * 1000));
        while (std::chrono::steady_clock::now() < until) {
            if (m_cancel && m_cancel->load())
                return Status(ErrorCode::Cancelled, what + ": cancelled");
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        backoff = std::min(backoff * 2, m_retry.maxBackoffSeconds);
    }
}

Result<std::vector<ModelSummary>> HubApi::search(const std::string& text, int limit) {
    if (limit < 1 || limit > 100)
        return Status(ErrorCode::InvalidArgument,
                      "search limit " + std::to_string(limit) + " is not in 1..100");
    std::string url = m_http.endpoint().base + "/api/models?search=" + percentEncode(text) +
                      "&limit=" + std::to_string(limit) + "&sort=downloads&direction=-1";
    for (const char* field : {"config", "safetensors", "siblings", "tags", "downloads", "likes",
                              "lastModified", "gated", "private", "pipeline_tag", "library_name"})
        url += std::string("&expand%5B%5D=") + field;
    auto r = getWithRetry(url, "search '" + text + "'");
    if (!r.isOk()) return r.status();
    const json j = json::parse(r.value().body, nullptr, false);
    if (j.is_discarded() || !j.is_array())
        return Status(ErrorCode::Malformed, url + ": the search answer is not a JSON array");
    std::vector<ModelSummary> out;
    for (const auto& item : j) {
        if (!item.is_object())
            return Status(ErrorCode::Malformed, url + ": a result is not an object");
        std::vector<std::string> files;
        ModelSummary s = summaryFrom(item, &files);
        if (s.id.empty()) return Status(ErrorCode::Malformed, url + ": a result without \"id\"");
        judgeSupport(s, files);
        out.push_back(std::move(s));
    }
    return out;
}

Result<ModelInfo> HubApi::modelInfo(const std::string& repo, const std::string& revision) {
    const std::string base = m_http.endpoint().base + "/api/models/" + repo;
    const std::string infoUrl = base + "/revision/" + percentEncode(revision);
    auto r = getWithRetry(infoUrl, repo + " at revision " + revision);
    if (!r.isOk()) return r.status();
    const json j = json::parse(r.value().body, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return Status(ErrorCode::Malformed, infoUrl + ": the model info is not a JSON object");
    ModelInfo info;
    std::vector<std::string> siblings;
    info.summary = summaryFrom(j, &siblings);
    info.revision = revision;
    info.commit = str(j, "sha");
    if (!isHex(info.commit, 40))
        return Status(ErrorCode::Malformed, infoUrl + ": \"sha\" is not a 40-digit commit id");

    std::string url = base + "/tree/" + info.commit + "?recursive=true";
    for (int page = 0; !url.empty(); ++page) {
        if (page > 100000)
            return Status(ErrorCode::Malformed, base + "/tree: more than 100000 pages");
        auto t = getWithRetry(url, "the file list of " + repo);
        if (!t.isOk()) return t.status();
        const json arr = json::parse(t.value().body, nullptr, false);
        if (arr.is_discarded() || !arr.is_array())
            return Status(ErrorCode::Malformed, url + ": the file list is not a JSON array");
        for (const auto& e : arr) {
            if (!e.is_object() || str(e, "type") == "directory") continue;
            if (str(e, "type") != "file") continue;
            RepoFile f;
            f.path = str(e, "path");
            if (!safeRepoPath(f.path))
                return Status(ErrorCode::Malformed, url + ": refusing the file path '" + f.path +
                                                        "' (not inside the repo)");
            auto size = e.find("size");
            if (size == e.end() || !size->is_number_unsigned())
                return Status(ErrorCode::Malformed, url + ": '" + f.path + "' has no size");
            f.size = size->get<uint64_t>();
            f.blobId = str(e, "oid");
            if (!isHex(f.blobId, 40))
                return Status(ErrorCode::Malformed, url + ": '" + f.path + "' has no git blob id");
            if (auto lfs = e.find("lfs"); lfs != e.end() && lfs->is_object()) {
                f.lfsSha256 = str(*lfs, "oid");
                if (!isHex(f.lfsSha256, 64))
                    return Status(ErrorCode::Malformed,
                                  url + ": '" + f.path + "' has an LFS entry without a SHA-256");
                if (auto ls = lfs->find("size"); ls != lfs->end() && ls->is_number_unsigned())
                    f.size = ls->get<uint64_t>();
            }
            info.files.push_back(std::move(f));
        }
        std::string next = nextLink(t.value().header("link"));
        if (!next.empty() && next[0] == '/') next = m_http.endpoint().base + next;
        url = next;
    }
    if (siblings.empty())
        for (const auto& f : info.files)
            siblings.push_back(f.path);
    judgeSupport(info.summary, siblings);
    return info;
}

Result<std::string> HubApi::fetchText(const std::string& repo, const std::string& revision,
                                      const std::string& path, uint64_t maxBytes) {
    const std::string url = resolveUrl(m_http.endpoint().base, repo, revision, path);
    auto r = getWithRetry(url, path + " of " + repo, maxBytes);
    if (!r.isOk()) return r.status();
    return std::move(r.value().body);
}

} // namespace coli::hub
