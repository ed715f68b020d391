// A colibri container: the manifest as the engine parses it, each shard against it (size, header,
// and every entry where the shard's header puts it), and the manifest against config.json.
#include "convert/container_weights.h"
#include "core/file_text.h"
#include "doctor/doctor_context.h"
#include "io/safetensors.h"

#include <map>

namespace coli::doctor::detail {
namespace {

constexpr const char* kManifest = convert::kManifestName;

std::string reconvert(const Context& c) {
    return "convert the model again from its source checkpoint: coli convert SOURCE_DIR " + c.dir +
           " --force";
}

// Each manifest entry in `shard` must be a tensor of the shard's header with the same bytes:
// the engine reads by the manifest's offsets, so a manifest that disagrees with its shards
// would feed the forward pass the wrong bytes. Returns false after one finding.
bool entriesMatchHeader(Context& c, const std::string& shard, const SafetensorsFile& f) {
    const auto check = [&](const std::string& what, const std::string& tensor, uint64_t offset,
                           uint64_t length) {
        const TensorInfo* t = f.find(tensor);
        std::string problem;
        if (!t)
            problem = what + " is in shard " + shard + " under tensor '" + tensor +
                      "', which the shard's header does not have";
        else if (t->fileOffset != offset || t->nbytes != length)
            problem = what + " lies at bytes [" + grouped(offset) + ", " +
                      grouped(offset + length) + ") of " + shard +
                      ", but the shard's header has '" + tensor + "' at [" +
                      grouped(t->fileOffset) + ", " + grouped(t->fileOffset + t->nbytes) + ")";
        if (problem.empty()) return true;
        c.add(Severity::Error, kManifest, "the manifest does not match its shards: " + problem,
              c.replaceAction(kManifest));
        return false;
    };
    for (const convert::TensorEntry& t : c.container->tensors)
        if (t.file == shard && !check("tensor '" + t.name + "'", t.name, t.offset, t.length))
            return false;
    for (const convert::ExpertEntry& e : c.container->experts)
        if (e.file == shard && !check("expert (layer " + std::to_string(e.layer) + ", expert " +
                                          std::to_string(e.expert) + ")",
                                      e.tensor, e.offset, e.length))
            return false;
    return true;
}

} // namespace

void checkContainer(Context& c) {
    c.step("checking", kManifest);
    auto text = readTextFile(c.path(kManifest));
    if (!text) {
        c.add(Severity::Error, kManifest, c.bare(text.status().message(), kManifest), reconvert(c));
        return;
    }
    auto parsed = convert::parseManifest(text.value(), c.path(kManifest));
    if (!parsed) {
        const Status& s = parsed.status();
        c.add(Severity::Error, kManifest, c.bare(s.message(), kManifest),
              s.code() == ErrorCode::Unsupported
                  ? "a newer colibri wrote this container: update colibri, or convert the source "
                    "checkpoint again with this version (coli convert SOURCE_DIR " +
                        c.dir + " --force)"
                  : reconvert(c));
        return;
    }
    c.container = std::move(parsed.value());
    c.container->dir = c.dir;
    // replaceAction now suggests converting again for files the receipt does not list.
    bool allGood = true;
    for (const convert::FileEntry& s : c.container->shards) {
        c.weightFiles.push_back(s.file);
        ++c.report.weightFiles;
        if (c.cancelled()) return;
        auto f = checkShard(c, s.file, kManifest, s.bytes, "the manifest");
        allGood = f && entriesMatchHeader(c, s.file, *f) && allGood;
    }
    if (!c.config) return;
    if (c.config->architecture != c.container->architecture) {
        c.add(Severity::Error, "config.json",
              "architecture " + c.config->architecture + ", but " + kManifest + " says " +
                  c.container->architecture + ": the config is not the one converted",
              reconvert(c));
        return;
    }
    if (!allGood) return;
    Status fits = convert::checkContainerFits(*c.container, *c.config);
    if (!fits.isOk())
        c.add(Severity::Error, kManifest,
              "the container does not fit config.json: " + c.bare(fits.message(), kManifest),
              reconvert(c));
}

} // namespace coli::doctor::detail
