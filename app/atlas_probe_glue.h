#pragma once
// The topic probe's storage glue (docs/visualisation.md "Topic probe", docs/app.md): between the
// EngineController (the probe runs on the engine thread) and the storage thread (StorageWorker).
//   - When a model is ready: on the storage thread, the model's identity (hashes cached in the
//     database), its default topic set (atlas/default_topics.h: default-model.json for the
//     shipped model, general.json otherwise) and its newest stored probe; back on the GUI thread
//     they go to the controller (setProbeTopicsFile, setAtlasProbe), so the Atlas view has the
//     newest probe data of the loaded model at load.
//   - When a probe run finishes: its rows are saved in one transaction (storage/atlas_store.h)
//     and the saved probe (with its id) is handed to the controller again; `saved` is emitted.
// A failure is the StorageWorker's (one banner through SessionManager); the app goes on.
// Thread-safety: GUI thread only; jobs capture values only (threading contract rule 6).
#include "engine_controller.h"
#include "storage_worker.h"

#include <QObject>
#include <QString>

namespace coli::app {

class AtlasProbeGlue : public QObject {
    Q_OBJECT
public:
    // `binDir`: the program's folder (where installed data is looked for). Both pointers must
    // outlive this object.
    AtlasProbeGlue(EngineController* controller, StorageWorker* storage, QString binDir,
                   QObject* parent = nullptr);

signals:
    void loaded(bool found); // the model's newest probe was looked up (found or not)
    void saved(qint64 probeId);

private:
    void onModelReady();
    void save(std::shared_ptr<const ProbeOutcome> outcome);

    EngineController* m_controller;
    StorageWorker* m_storage;
    QString m_binDir;
};

} // namespace coli::app
