#include "atlas_probe_glue.h"

#include "atlas/default_topics.h"
#include "storage/atlas_store.h"
#include "storage/model_identity.h"

#include <QDir>
#include <QPointer>

namespace coli::app {

AtlasProbeGlue::AtlasProbeGlue(EngineController* controller, StorageWorker* storage, QString binDir,
                               QObject* parent)
    : QObject(parent), m_controller(controller), m_storage(storage), m_binDir(std::move(binDir)) {
    connect(m_controller, &EngineController::loadStateChanged, this, [this] {
        if (m_controller->loadState() == QLatin1String("ready")) onModelReady();
    });
    m_controller->setProbeHook(
        [this](std::shared_ptr<const ProbeOutcome> outcome) { save(std::move(outcome)); });
}

void AtlasProbeGlue::onModelReady() {
    QPointer<AtlasProbeGlue> self(this);
    const QString qdir = m_controller->modelDir();
    const std::string dir = QDir::cleanPath(qdir).toStdString();
    const std::string binDir = m_binDir.toStdString();
    m_storage->post("Reading the topic probe", [self, qdir, dir, binDir](StorageContext& ctx) {
        auto identity = storage::modelIdentity(dir, &ctx.db());
        if (!identity) return Status::ok(); // not a database problem: no probe for it then
        auto topics = atlas::defaultTopicFile(binDir, *identity, &ctx.db());
        std::shared_ptr<const storage::AtlasProbe> newest;
        auto model = ctx.db().findModel(*identity);
        if (!model) return model.status();
        if (model.value()) {
            auto p = storage::AtlasStore(ctx.db()).newestProbe(**model);
            if (!p) return p.status();
            if (p.value()) newest = std::make_shared<const storage::AtlasProbe>(std::move(**p));
        }
        const QString file = topics ? QString::fromStdString(*topics) : QString();
        ctx.notify([self, qdir, file, newest] {
            if (!self || qdir != self->m_controller->modelDir()) return; // another model by now
            if (!file.isEmpty()) self->m_controller->setProbeTopicsFile(file);
            if (newest) self->m_controller->setAtlasProbe(qdir, newest);
            emit self->loaded(newest != nullptr);
        });
        return Status::ok();
    });
}

void AtlasProbeGlue::save(std::shared_ptr<const ProbeOutcome> outcome) {
    QPointer<AtlasProbeGlue> self(this);
    const QString qdir = QString::fromStdString(outcome->modelDir);
    m_storage->post("Saving the topic probe", [self, qdir, outcome](StorageContext& ctx) {
        auto identity = storage::modelIdentity(outcome->modelDir, &ctx.db());
        if (!identity) return identity.status();
        auto model = ctx.db().modelId(*identity, outcome->modelDir);
        if (!model) return model.status();
        auto id = storage::AtlasStore(ctx.db()).saveProbe(*model, outcome->probe);
        if (!id) return id.status();
        auto stored = std::make_shared<storage::AtlasProbe>(outcome->probe);
        stored->id = *id;
        const qint64 probeId = *id;
        ctx.notify([self, qdir, stored, probeId] {
            if (!self) return;
            self->m_controller->setAtlasProbe(qdir, stored);
            emit self->saved(probeId);
        });
        return Status::ok();
    });
}

} // namespace coli::app
