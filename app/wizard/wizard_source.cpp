#include "wizard/wizard_source.h"

#include "convert/manifest.h"
#include "convert/source_checkpoint.h"
#include "model/config.h"

#include <filesystem>
#include <system_error>

namespace coli::app::wizard {

namespace {
uint64_t folderBytes(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    uint64_t n = 0;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        if (it->is_regular_file(ec)) n += it->file_size(ec);
    }
    return n;
}
} // namespace

Result<uint64_t> plannedContainerBytes(const std::string& dir, const convert::PlanOptions& plan) {
    auto ck = convert::SourceCheckpoint::open(dir);
    if (!ck) return ck.status();
    auto cfg = loadConfig(dir);
    if (!cfg) return cfg.status();
    auto p = convert::makePlan(*ck.value(), cfg.value(), plan);
    if (!p) return p.status();
    return p->totalBytes;
}

Result<LocalModel> inspectLocalModel(const std::string& dir, const convert::PlanOptions& plan) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return Status(ErrorCode::NotFound, dir + ": no such folder");
    if (!fs::is_regular_file(fs::path(dir) / "config.json", ec))
        return Status(ErrorCode::NotFound,
                      dir + " is not a model folder: a model folder holds config.json, "
                            "*.safetensors and tokenizer.json");
    LocalModel m;
    m.dir = dir;
    m.folderBytes = folderBytes(dir);
    auto cfg = loadConfig(dir);
    if (!cfg) {
        // An architecture this app does not run is an answer, not a failure of the wizard.
        if (cfg.status().code() == ErrorCode::Unsupported) {
            m.note = cfg.status().message();
            return m;
        }
        return cfg.status();
    }
    m.supported = true;
    m.architecture = cfg->architecture;
    m.layers = cfg->nLayers;
    m.experts = cfg->nExperts;
    m.expertsPerToken = cfg->topK;
    m.isContainer = convert::isContainerDir(dir);
    if (m.isContainer) {
        auto c = convert::openContainer(dir);
        if (!c) return c.status();
        m.formats = c->describe();
        return m;
    }
    auto ck = convert::SourceCheckpoint::open(dir);
    if (!ck) return ck.status();
    for (const TensorInfo* t : ck.value()->tensors())
        m.parameters += t->numel();
    auto p = convert::makePlan(*ck.value(), cfg.value(), plan);
    if (!p) return p.status();
    m.containerBytes = p->totalBytes;
    return m;
}

} // namespace coli::app::wizard
