#include "convert/converter.h"

#include "convert/sha256.h"
#include "convert/source_reader.h"
#include "core/file_text.h"
#include "core/regular_file.h"
#include "core/strings.h"
#include "io/safetensors.h"
#include "model/config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <sys/stat.h>

namespace coli::convert {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A source file as it was when the conversion started; a change means the input moved under us.
struct SourceFile {
    std::string name; // relative to the source folder
    std::string path;
    uint64_t bytes = 0;
    int64_t mtimeNs = 0;
    std::string sha256;
    bool copy = false; // side file copied unchanged into the container
};

Status statFile(const std::string& path, uint64_t* bytes, int64_t* mtimeNs) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return {ErrorCode::Io, path + ": stat failed: " + std::strerror(errno)};
    *bytes = uint64_t(st.st_size);
    *mtimeNs = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    return {};
}

// Side files copied unchanged: config.json, generation_config.json, tokenizer*.json,
// special_tokens_map.json.
bool isSideFile(const std::string& name) {
    if (name == "config.json" || name == "generation_config.json" ||
        name == "special_tokens_map.json")
        return true;
    return name.rfind("tokenizer", 0) == 0 && name.size() > 5 &&
           name.compare(name.size() - 5, 5, ".json") == 0;
}

// True when `inner` is `outer` or lies inside it (both absolute and normalised).
bool isInside(const fs::path& inner, const fs::path& outer) {
    auto i = inner.begin();
    for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
        if (o->empty()) continue; // trailing separator
        if (i == inner.end() || *i != *o) return false;
    }
    return true;
}

std::string optionsKey(const PlanOptions& o) {
    return std::string("experts=") + storedFormatName(o.experts) +
           " dense=" + storedFormatName(o.dense) + " embed=" + storedFormatName(o.embed) +
           " shard=" + std::to_string(o.maxShardBytes);
}

// Writes through a WritableFile while hashing and counting.
class HashedOut {
public:
    HashedOut(WritableFile& f, Sha256* h) : m_f(f), m_h(h) {}
    Status write(const void* p, size_t n) {
        COLI_RETURN_IF_ERROR(m_f.write(p, n));
        if (m_h) m_h->update(p, n);
        m_pos += n;
        return {};
    }
    Status zeros(uint64_t n) {
        static const unsigned char kZero[4096] = {};
        while (n > 0) {
            const size_t k = size_t(std::min<uint64_t>(n, sizeof kZero));
            COLI_RETURN_IF_ERROR(write(kZero, k));
            n -= k;
        }
        return {};
    }
    uint64_t pos() const { return m_pos; }

private:
    WritableFile& m_f;
    Sha256* m_h;
    uint64_t m_pos = 0;
};

class Converter {
public:
    Converter(const std::string& src, const std::string& dst, const ConvertOptions& o,
              FileSystem& fs, const ConvertProgressFn& progress, const std::atomic<bool>* cancel)
        : m_srcArg(src), m_dstArg(dst), m_o(o), m_fs(fs), m_progress(progress), m_cancel(cancel),
          m_t0(Clock::now()) {}

    FailureSide side = FailureSide::None;

    Result<ConvertReport> run() {
        COLI_RETURN_IF_ERROR(source(checkPaths()));
        auto ck = SourceCheckpoint::open(m_src);
        if (!ck) return source(ck.status());
        m_ck = std::move(ck.value());
        auto cfg = loadConfig(m_src);
        if (!cfg) return source(cfg.status());
        m_cfg = cfg.value();
        auto plan = makePlan(*m_ck, m_cfg, m_o.plan);
        if (!plan) return source(plan.status());
        m_plan = std::move(plan.value());
        COLI_RETURN_IF_ERROR(source(listSources()));
        COLI_RETURN_IF_ERROR(prepareDestination());
        COLI_RETURN_IF_ERROR(source(hashSources()));
        COLI_RETURN_IF_ERROR(verifyFinished());
        COLI_RETURN_IF_ERROR(checkSpace());
        COLI_RETURN_IF_ERROR(dest(writeState()));
        for (size_t s = 0; s < m_plan.shards.size(); ++s) {
            if (m_finished.count(m_plan.shards[s].file)) continue;
            COLI_RETURN_IF_ERROR(writeShard(s));
        }
        return finish();
    }

private:
    // The first failure decides the side (checkPaths sets Destination itself).
    Status source(Status s) {
        if (!s && side == FailureSide::None) side = FailureSide::Source;
        return s;
    }
    Status dest(Status s) {
        if (!s && side == FailureSide::None) side = FailureSide::Destination;
        return s;
    }

    Status checkPaths() {
        std::error_code ec;
        COLI_RETURN_IF_ERROR(symbolicLinkProblem(m_srcArg));
        if (!fs::is_directory(m_srcArg, ec))
            return {ErrorCode::NotFound, m_srcArg + ": not a directory (expected a checkpoint)"};
        m_src = fs::canonical(m_srcArg, ec).string();
        if (ec) return {ErrorCode::Io, m_srcArg + ": " + ec.message()};
        const fs::path dst = fs::weakly_canonical(fs::absolute(m_dstArg), ec);
        if (ec) return {ErrorCode::Io, m_dstArg + ": " + ec.message()};
        m_dst = dst.string();
        if (isInside(dst, fs::path(m_src))) {
            side = FailureSide::Destination;
            return {ErrorCode::InvalidArgument,
                    m_dstArg + ": the destination is " +
                        (dst == fs::path(m_src) ? "the source folder itself"
                                                : "inside the source folder " + m_src) +
                        "; choose another folder"};
        }
        return {};
    }

    Status listSources() {
        for (const std::string& p : m_ck->shardPaths())
            m_sources.push_back({fs::path(p).filename().string(), p, 0, 0, "", false});
        std::vector<std::string> side;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(m_src, ec)) {
            const std::string n = e.path().filename().string();
            if ((isSideFile(n) || n == "model.safetensors.index.json") && e.is_regular_file(ec))
                side.push_back(n);
        }
        if (ec) return {ErrorCode::Io, m_src + ": cannot list: " + ec.message()};
        std::sort(side.begin(), side.end());
        for (const std::string& n : side)
            m_sources.push_back({n, (fs::path(m_src) / n).string(), 0, 0, "", isSideFile(n)});
        std::sort(m_sources.begin(), m_sources.end(),
                  [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
        for (SourceFile& f : m_sources) {
            COLI_RETURN_IF_ERROR(statFile(f.path, &f.bytes, &f.mtimeNs));
            if (!f.copy && f.name.size() > 12 &&
                f.name.compare(f.name.size() - 12, 12, ".safetensors") == 0)
                m_sourceBytes += f.bytes;
        }
        return {};
    }

    std::string statePath() const { return (fs::path(m_dst) / kStateName).string(); }

    // The state's identity: a state file written for other sources, options or layout is stale.
    json fingerprint() const {
        json srcs = json::array();
        for (const SourceFile& f : m_sources)
            srcs.push_back({{"file", f.name}, {"bytes", f.bytes}, {"mtime_ns", f.mtimeNs}});
        json shards = json::array();
        for (const PlannedShard& s : m_plan.shards)
            shards.push_back({{"file", s.file}, {"bytes", s.bytes}});
        return {{"converter_version", kConverterVersion},
                {"options", optionsKey(m_o.plan)},
                {"sources", srcs},
                {"shards", shards}};
    }

    Status prepareDestination() {
        std::error_code ec;
        if (fs::exists(m_dst, ec)) {
            if (!fs::is_directory(m_dst, ec))
                return dest(
                    {ErrorCode::InvalidArgument, m_dstArg + ": exists and is not a folder"});
            if (!fs::is_empty(m_dst, ec)) {
                if (loadState()) {
                    m_resumed = true;
                } else if (!m_o.force) {
                    const bool done = fs::exists(fs::path(m_dst) / kManifestName, ec);
                    return dest({ErrorCode::InvalidArgument,
                                 m_dstArg +
                                     (done ? ": already holds a colibri container"
                                           : ": the destination folder is not empty") +
                                     " (use --force to write into it anyway)"});
                }
            }
        } else {
            fs::create_directories(m_dst, ec);
            if (ec) return dest({ErrorCode::Io, m_dstArg + ": cannot create: " + ec.message()});
        }
        return {};
    }

    // True when the destination holds the state of an interrupted conversion of this very source
    // with these options; fills m_finished and the source hashes.
    bool loadState() {
        auto text = readOptionalFile(statePath());
        if (!text || !text.value() || text.value()->empty()) return false;
        json j;
        try {
            j = json::parse(*text.value());
            if (j.value("fingerprint", json()) != fingerprint()) return false;
            for (auto& [file, sha] : j.at("finished").items())
                m_finished[file] = sha.get<std::string>();
            for (SourceFile& f : m_sources)
                f.sha256 = j.at("source_sha256").at(f.name).get<std::string>();
        } catch (const json::exception&) {
            m_finished.clear();
            for (SourceFile& f : m_sources)
                f.sha256.clear();
            return false;
        }
        return true;
    }

    Status writeState() {
        json sha = json::object();
        for (const SourceFile& f : m_sources)
            sha[f.name] = f.sha256;
        json j = {
            {"fingerprint", fingerprint()}, {"source_sha256", sha}, {"finished", json(m_finished)}};
        return writeSmallFile(statePath(), j.dump(1) + "\n");
    }

    // Whole small file: written to NAME.partial, synced, renamed over NAME.
    Status writeSmallFile(const std::string& path, const std::string& text) {
        const std::string tmp = path + ".partial";
        auto f = m_fs.create(tmp);
        if (!f) return f.status();
        COLI_RETURN_IF_ERROR(f.value()->write(text.data(), text.size()));
        COLI_RETURN_IF_ERROR(f.value()->sync());
        COLI_RETURN_IF_ERROR(f.value()->close());
        return m_fs.rename(tmp, path);
    }

    void report(const char* phase, uint64_t bytesDone, uint64_t bytesTotal) {
        if (!m_progress) return;
        ConvertProgress p;
        p.phase = phase;
        p.itemsDone = m_itemsDone;
        p.itemsTotal = m_plan.items.size();
        p.bytesDone = bytesDone;
        p.bytesTotal = bytesTotal;
        p.seconds = std::chrono::duration<double>(Clock::now() - m_t0).count();
        m_progress(p);
    }

    Status hashSources() {
        uint64_t total = 0;
        for (const SourceFile& f : m_sources)
            if (f.sha256.empty()) total += f.bytes;
        struct Ctx {
            Converter* self;
            uint64_t done, total;
        } ctx{this, 0, total};
        for (SourceFile& f : m_sources) {
            if (!f.sha256.empty()) continue; // from the state of the run being resumed
            auto h = sha256File(
                f.path,
                [](void* c, size_t n) {
                    auto* x = static_cast<Ctx*>(c);
                    x->done += n;
                    x->self->report("hashing", x->done, x->total);
                },
                &ctx);
            if (!h) return h.status();
            f.sha256 = h.value();
        }
        return {};
    }

    Status verifyFinished() {
        for (auto it = m_finished.begin(); it != m_finished.end();) {
            const std::string path = (fs::path(m_dst) / it->first).string();
            auto h = sha256File(path);
            if (h && h.value() == it->second) {
                ++it;
            } else {
                it = m_finished.erase(it); // missing or damaged: written again
            }
        }
        for (const PlannedShard& s : m_plan.shards) {
            if (!m_finished.count(s.file)) continue;
            m_itemsDone += s.items.size();
            m_bytesDone += s.bytes;
            ++m_reused;
        }
        if (m_reused) report("verifying", m_bytesDone, m_plan.totalBytes);
        return {};
    }

    // Leftovers of an interrupted run (our own names only): they hold space the rest needs.
    void removeStalePartials() {
        std::error_code ec;
        for (const PlannedShard& sh : m_plan.shards)
            fs::remove(fs::path(m_dst) / (sh.file + ".partial"), ec);
    }

    Status checkSpace() {
        removeStalePartials();
        uint64_t need = 64 << 10; // manifest, index, state: generous
        need += uint64_t(m_plan.items.size()) * 512;
        for (const PlannedShard& s : m_plan.shards)
            if (!m_finished.count(s.file)) need += s.bytes;
        for (const SourceFile& f : m_sources)
            if (f.copy) need += f.bytes;
        auto freeBytes = m_fs.freeBytes(m_dst);
        if (!freeBytes) return dest(freeBytes.status());
        if (freeBytes.value() < need)
            return dest({ErrorCode::NoSpace,
                         "not enough free space in " + m_dstArg + ": the container needs " +
                             mibString(need) + " more, " + mibString(freeBytes.value()) + " free"});
        return {};
    }

    Status sourcesUnchanged() {
        for (const SourceFile& f : m_sources) {
            uint64_t bytes = 0;
            int64_t mtime = 0;
            Status st = statFile(f.path, &bytes, &mtime);
            if (!st || bytes != f.bytes || mtime != f.mtimeNs)
                return source({ErrorCode::Malformed,
                               f.path + ": source changed during conversion (size or "
                                        "modification time differ); convert again once it is "
                                        "stable"});
        }
        return {};
    }

    Status writeShard(size_t s) {
        const PlannedShard& sh = m_plan.shards[s];
        const std::string final = (fs::path(m_dst) / sh.file).string();
        const std::string partial = final + ".partial";
        auto f = m_fs.create(partial);
        if (!f) return dest(f.status());
        Sha256 hash;
        HashedOut out(*f.value(), &hash);
        unsigned char len[8];
        for (int i = 0; i < 8; ++i)
            len[i] = static_cast<unsigned char>(uint64_t(sh.header.size()) >> (8 * i));
        COLI_RETURN_IF_ERROR(dest(out.write(len, 8)));
        COLI_RETURN_IF_ERROR(dest(out.write(sh.header.data(), sh.header.size())));
        for (size_t idx : sh.items) {
            if (m_cancel && m_cancel->load(std::memory_order_relaxed))
                return {ErrorCode::Cancelled, "conversion cancelled; run it again to resume"};
            const PlannedItem& it = m_plan.items[idx];
            const uint64_t start = out.pos();
            if (start != it.fileOffset)
                return {ErrorCode::Internal, sh.file + ": '" + it.name + "' at byte " +
                                                 std::to_string(start) + ", planned " +
                                                 std::to_string(it.fileOffset)};
            for (const PlannedPart& p : it.parts) {
                COLI_RETURN_IF_ERROR(dest(out.zeros(start + p.offset - out.pos())));
                const int64_t step = rowsPerPiece(p.src.cols);
                for (int64_t r = 0; r < p.src.rows; r += step) {
                    const int64_t n = std::min(step, p.src.rows - r);
                    COLI_RETURN_IF_ERROR(source(encodeRows(*m_ck, p, r, n, m_f32, m_bytes)));
                    COLI_RETURN_IF_ERROR(dest(out.write(m_bytes.data(), m_bytes.size())));
                    report("converting", m_bytesDone + out.pos(), m_plan.totalBytes);
                }
            }
            COLI_RETURN_IF_ERROR(dest(out.zeros(start + it.length - out.pos())));
            ++m_itemsDone;
            report("converting", m_bytesDone + out.pos(), m_plan.totalBytes);
        }
        if (out.pos() != sh.bytes)
            return {ErrorCode::Internal, sh.file + ": wrote " + std::to_string(out.pos()) +
                                             " bytes, planned " + std::to_string(sh.bytes)};
        COLI_RETURN_IF_ERROR(dest(f.value()->sync()));
        COLI_RETURN_IF_ERROR(dest(f.value()->close()));
        COLI_RETURN_IF_ERROR(sourcesUnchanged());
        COLI_RETURN_IF_ERROR(dest(m_fs.rename(partial, final)));
        m_finished[sh.file] = hash.finishHex();
        m_bytesDone += sh.bytes;
        ++m_written;
        return dest(writeState());
    }

    std::string modelId() const {
        auto text = readOptionalFile((fs::path(m_src) / "config.json").string());
        if (text && text.value()) {
            try {
                const json j = json::parse(*text.value());
                if (j.contains("_name_or_path") && j["_name_or_path"].is_string() &&
                    !j["_name_or_path"].get<std::string>().empty())
                    return j["_name_or_path"].get<std::string>();
            } catch (const json::exception&) {
            }
        }
        return fs::path(m_src).filename().string();
    }

    Container manifest() const {
        Container c;
        c.formatVersion = kContainerFormatVersion;
        c.converterVersion = kConverterVersion;
        c.converter = m_o.converter;
        c.modelId = modelId();
        c.architecture = m_cfg.architecture;
        for (const SourceFile& f : m_sources)
            c.sourceFiles.push_back({f.name, f.bytes, f.sha256});
        const PlanOptions& o = m_o.plan;
        c.quantisation = {{"experts", storedFormatName(o.experts)},
                          {"dense", storedFormatName(o.dense)},
                          {"embeddings", storedFormatName(o.embed)},
                          {"lm_head", storedFormatName(o.embed)},
                          {"norms", "f32"},
                          {"router", "f32"}};
        for (const PlannedShard& s : m_plan.shards)
            c.shards.push_back({s.file, s.bytes, m_finished.at(s.file)});
        for (const PlannedItem& it : m_plan.items) {
            const std::string& file = m_plan.shards[size_t(it.shard)].file;
            if (it.cls == TensorClass::Other) c.quantisation["other"] = "f32";
            if (it.cls != TensorClass::Experts) {
                const PlannedPart& p = it.parts[0];
                c.tensors.push_back({it.name, it.cls, file, it.fileOffset, it.length, p.format,
                                     p.shape, dtypeName(m_ck->find(p.src.tensor)->dtype)});
                continue;
            }
            ExpertEntry e;
            e.layer = it.layer;
            e.expert = it.expert;
            e.tensor = it.name;
            e.file = file;
            e.offset = it.fileOffset;
            e.length = it.length;
            ExpertPart* parts[3] = {&e.gate, &e.up, &e.down};
            for (int k = 0; k < 3; ++k)
                *parts[k] = {it.parts[size_t(k)].format, it.parts[size_t(k)].shape,
                             it.parts[size_t(k)].offset, it.parts[size_t(k)].length};
            c.experts.push_back(std::move(e));
        }
        std::sort(c.experts.begin(), c.experts.end(),
                  [](const ExpertEntry& a, const ExpertEntry& b) {
                      return std::make_pair(a.layer, a.expert) < std::make_pair(b.layer, b.expert);
                  });
        return c;
    }

    Result<ConvertReport> finish() {
        for (const SourceFile& f : m_sources) {
            if (!f.copy) continue;
            auto text = readTextFile(f.path);
            if (!text) return source(text.status());
            COLI_RETURN_IF_ERROR(
                dest(writeSmallFile((fs::path(m_dst) / f.name).string(), text.value())));
        }
        json index = {{"metadata", {{"format", "colibri"}}}, {"weight_map", json::object()}};
        uint64_t total = 0;
        for (const PlannedItem& it : m_plan.items) {
            index["weight_map"][it.name] = m_plan.shards[size_t(it.shard)].file;
            total += it.length;
        }
        index["metadata"]["total_size"] = total;
        COLI_RETURN_IF_ERROR(dest(writeSmallFile(
            (fs::path(m_dst) / "model.safetensors.index.json").string(), index.dump(2) + "\n")));
        COLI_RETURN_IF_ERROR(sourcesUnchanged());
        ConvertReport r;
        r.manifest = manifest();
        // The manifest comes last: its presence means the container is complete.
        COLI_RETURN_IF_ERROR(dest(writeSmallFile((fs::path(m_dst) / kManifestName).string(),
                                                 manifestToJson(r.manifest))));
        std::error_code ec;
        fs::remove(statePath(), ec);
        r.sourceBytes = m_sourceBytes;
        r.outputBytes = m_plan.totalBytes;
        r.shardsWritten = m_written;
        r.shardsReused = m_reused;
        r.seconds = std::chrono::duration<double>(Clock::now() - m_t0).count();
        r.manifest.dir = m_dst;
        return r;
    }

    std::string m_srcArg, m_dstArg, m_src, m_dst;
    const ConvertOptions& m_o;
    FileSystem& m_fs;
    const ConvertProgressFn& m_progress;
    const std::atomic<bool>* m_cancel;
    Clock::time_point m_t0;
    std::unique_ptr<SourceCheckpoint> m_ck;
    ModelConfig m_cfg;
    Plan m_plan;
    std::vector<SourceFile> m_sources;
    uint64_t m_sourceBytes = 0;
    bool m_resumed = false;
    std::map<std::string, std::string> m_finished; // shard file -> SHA-256
    size_t m_itemsDone = 0, m_written = 0, m_reused = 0;
    uint64_t m_bytesDone = 0;
    std::vector<float> m_f32;
    std::vector<uint8_t> m_bytes;
};

} // namespace

Result<ConvertReport> convertCheckpoint(const std::string& src, const std::string& dst,
                                        const ConvertOptions& opt, FileSystem& fs,
                                        const ConvertProgressFn& progress,
                                        const std::atomic<bool>* cancel, FailureSide* side) {
    Converter c(src, dst, opt, fs, progress, cancel);
    auto r = c.run();
    if (side) *side = r ? FailureSide::None : c.side;
    return r;
}

} // namespace coli::convert
