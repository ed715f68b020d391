// config.json: the family and the sizes every other check relies on.
#include "doctor/doctor_context.h"

namespace coli::doctor::detail {

void checkConfig(Context& c) {
    const std::string file = "config.json";
    if (c.isBroken(file)) return; // the receipt check said why
    auto cfg = loadConfig(c.dir);
    if (cfg) {
        c.config = std::move(cfg.value());
        c.report.architecture = c.config->architecture;
        return;
    }
    const Status& s = cfg.status();
    switch (s.code()) {
    case ErrorCode::NotFound:
        // "is not a model folder ... (config.json is missing)", or a dangling symbolic link.
        c.add(Severity::Error, file,
              s.message().find("config.json is missing") != std::string::npos
                  ? "missing: the model's architecture and sizes are unknown"
                  : c.bare(s.message(), file),
              c.replaceAction(file));
        break;
    case ErrorCode::Unsupported:
        c.add(Severity::Error, file, c.bare(s.message(), file),
              "this app runs only the families listed; choose a model of one of them (search "
              "with coli search TEXT)");
        break;
    default:
        c.add(Severity::Error, file, c.bare(s.message(), file),
              c.replaceAction(file) +
                  "; if the publisher's own file reads like this, the model cannot be run");
        break;
    }
}

} // namespace coli::doctor::detail
