// The wizard's Mirror page (docs/app.md "The model wizard", docs/mirror.md): a folder on another
// disk, the mirror plan for it (`coli mirror plan`: the expert files ranked by learned heat per
// byte, fitted into its free space minus the reserve) and the staging (`coli mirror stage`: copy,
// fsync, hash, atomic rename, receipt last; resumable), on the wizard's worker thread. A finished
// mirror becomes the Settings' mirror folder, which the engine uses from the next load (Open).
// Part of WizardController (wizard_controller.h).
#include "wizard/wizard_controller.h"

#include "wizard/wizard_text.h"

#include "app_settings.h"
#include "mirror/expert_files.h"
#include "mirror/mirror_heat.h"
#include "mirror/mirror_plan.h"
#include "mirror/mirror_stage.h"

#include <QDir>

#include <memory>
#include <optional>

namespace coli::app {

using wizard::bytes;
using wizard::qs;

namespace {

struct MirrorAnswer {
    Result<mirror::MirrorPlan> plan = Status(ErrorCode::Cancelled, "not planned");
    QString ranking; // how the files were ranked, in words
    bool container = false;
};

// `coli mirror plan`'s steps: the model's expert files, its learned heat (none: ranked by expert
// bytes), the plan for the folder. Runs on the worker thread.
// reserve: the free space to keep in the mirror's file system (unset: the plan's default).
MirrorAnswer planFor(const std::string& model, const std::string& mirrorDir, const std::string& db,
                     std::optional<uint64_t> reserve) {
    MirrorAnswer a;
    auto files = mirror::findExpertFiles(model);
    if (!files) {
        a.plan = Status(files.status().code(),
                        "cannot read the model " + model + ": " + files.status().message());
        return a;
    }
    a.container = files.value().container;
    mirror::ExpertHeatMap heat;
    auto learned = mirror::loadModelHeat(model, db);
    if (learned && learned.value().known) {
        heat = learned.value().heat;
        a.ranking = QObject::tr("by learned heat per byte (the experts this model routes most)");
    } else {
        a.ranking = QObject::tr("by expert bytes per byte (no usage history yet: chat with the "
                                "model and plan again to rank by learned heat)");
    }
    mirror::MirrorPlanOptions options;
    options.reserveBytes = reserve;
    a.plan = mirror::planMirrorFolder(files.value(), heat, mirrorDir, options);
    return a;
}

QVariantMap planFigures(const MirrorAnswer& a, const QString& mirrorDir, const QString& modelDir) {
    QVariantMap m;
    m[QStringLiteral("checked")] = true;
    if (!a.plan) {
        m[QStringLiteral("error")] = qs(a.plan.status().message());
        return m;
    }
    const mirror::MirrorPlan& p = a.plan.value();
    m[QStringLiteral("sameDisk")] =
        mirror::sameFileSystem(modelDir.toStdString(), mirrorDir.toStdString());
    m[QStringLiteral("freeText")] =
        QObject::tr("%1 free of %2").arg(bytes(p.space.freeBytes), bytes(p.space.totalBytes));
    m[QStringLiteral("reserveText")] = bytes(p.reserveBytes);
    m[QStringLiteral("roomText")] = bytes(p.usableBytes);
    m[QStringLiteral("rankingText")] = a.ranking;
    QVariantList files;
    int chosen = 0, staged = 0;
    for (const mirror::PlannedFile& f : p.files) {
        chosen += f.choice == mirror::FileChoice::Chosen;
        staged += f.choice == mirror::FileChoice::Staged;
        files << QVariantMap{
            {QStringLiteral("path"), qs(f.path)},
            {QStringLiteral("sizeText"), bytes(f.size)},
            {QStringLiteral("experts"), f.experts},
            {QStringLiteral("choice"),
             QString::fromLatin1(mirror::fileChoiceName(f.choice)) +
                 (f.note.empty() ? QString() : QStringLiteral(" (%1)").arg(qs(f.note)))}};
    }
    m[QStringLiteral("files")] = files;
    m[QStringLiteral("fileCount")] = chosen + staged;
    m[QStringLiteral("staged")] = chosen == 0 && staged > 0;
    m[QStringLiteral("mirrorText")] = QObject::tr("%1 of %2 expert files, %3")
                                          .arg(chosen + staged)
                                          .arg(p.files.size())
                                          .arg(bytes(p.mirrorBytes));
    m[QStringLiteral("copyText")] = bytes(p.copyBytes);
    m[QStringLiteral("coveredText")] =
        QObject::tr("%1 % of the %2")
            .arg(100.0 * p.coveredShare(), 0, 'f', 1)
            .arg(p.byHeat ? QObject::tr("learned heat") : QObject::tr("expert bytes"));
    return m;
}

} // namespace

void WizardController::chooseMirrorFolder(const QString& dir) {
    if (m_mirrorState == QStringLiteral("running") || modelDir().isEmpty()) return;
    m_mirrorDir = dir.isEmpty() ? QString() : QDir::cleanPath(dir);
    m_mirrorPlan.clear();
    m_mirrorError.clear();
    m_mirrorState = QStringLiteral("idle");
    m_mirrorStatus.clear();
    m_mirrorProgress = 0;
    const uint64_t generation = ++m_mirrorGeneration;
    if (m_mirrorDir.isEmpty()) {
        emit stateChanged();
        return;
    }
    const QString model = modelDir(), target = m_mirrorDir;
    ++m_jobs;
    emit stateChanged();
    m_worker->post([this, generation, model, target, db = databasePath(),
                    reserve = m_spaceMargin](const std::atomic<bool>&) {
        auto a = std::make_shared<MirrorAnswer>(
            planFor(model.toStdString(), target.toStdString(), db, reserve));
        QMetaObject::invokeMethod(
            this,
            [this, a, generation, model, target] {
                --m_jobs;
                if (generation == m_mirrorGeneration) m_mirrorPlan = planFigures(*a, target, model);
                emit stateChanged();
                if (generation == m_mirrorGeneration) emit mirrorPlanned();
            },
            Qt::QueuedConnection);
    });
}

void WizardController::startMirror() {
    if (m_mirrorState == QStringLiteral("running") || m_mirrorDir.isEmpty() ||
        m_mirrorPlan.value(QStringLiteral("fileCount")).toInt() == 0)
        return;
    m_mirrorState = QStringLiteral("running");
    m_mirrorError.clear();
    m_mirrorProgress = 0;
    m_mirrorStatus = tr("Starting…");
    m_mirrorSlot.publish({});
    const QString model = modelDir(), target = m_mirrorDir;
    const uint64_t generation = m_mirrorGeneration;
    ++m_jobs;
    emit stateChanged();
    emit progressChanged();
    m_mirrorCancel = m_worker->post([this, model, target, generation, db = databasePath(),
                                     reserve = m_spaceMargin](const std::atomic<bool>& cancel) {
        // Planned again here, as `coli mirror stage` does: the disk may have changed meanwhile.
        MirrorAnswer a = planFor(model.toStdString(), target.toStdString(), db, reserve);
        auto r = std::make_shared<Result<mirror::StageReport>>(a.plan.status());
        if (a.plan) {
            mirror::StageOptions so;
            so.cancel = &cancel;
            so.progress = [this](const mirror::StageProgress& p) {
                MirrorSnap s;
                s.any = true;
                s.fraction = p.workTotal ? double(p.workDone) / double(p.workTotal) : 0.0;
                const double rate = p.seconds > 0 ? double(p.workDone) / p.seconds : 0;
                s.text = tr("%1 %2 (%3 of %4): %5 of %6, %7/s")
                             .arg(QString::fromLatin1(p.phase), qs(p.path))
                             .arg(p.fileIndex + 1)
                             .arg(p.fileCount)
                             .arg(bytes(p.fileDone), bytes(p.fileBytes), bytes(uint64_t(rate)));
                m_mirrorSlot.publish(s);
            };
            *r = mirror::stageMirror(a.plan.value(), so);
        }
        QMetaObject::invokeMethod(
            this,
            [this, r, generation, model, target] {
                --m_jobs;
                if (generation != m_mirrorGeneration) { // start over meanwhile
                    emit stateChanged();
                    return;
                }
                if (r->isOk()) {
                    const mirror::StageReport& rep = r->value();
                    if (m_settings) m_settings->setMirrorFolder(target);
                    m_mirrorState = QStringLiteral("done"); // chooseMirrorFolder waits for no stage
                    chooseMirrorFolder(target); // planned again: the files now show as staged
                    m_mirrorState = QStringLiteral("done");
                    m_mirrorProgress = 1.0;
                    m_mirrorStatus =
                        tr("Mirror staged: %1 (%2 copied, %3 kept from before), %4 in %5 s. "
                           "The model reads from both disks from the next load.")
                            .arg(rep.files.size() == 1 ? tr("1 file")
                                                       : tr("%1 files").arg(rep.files.size()))
                            .arg(rep.copied)
                            .arg(rep.kept)
                            .arg(bytes(rep.bytesCopied))
                            .arg(rep.seconds, 0, 'f', 1);
                } else if (r->status().code() == ErrorCode::Cancelled) {
                    m_mirrorState = QStringLiteral("cancelled");
                    m_mirrorStatus = tr("Cancelled. Finished files are kept: Stage goes on from "
                                        "them.");
                } else {
                    m_mirrorState = QStringLiteral("failed");
                    m_mirrorError = r->status().code() == ErrorCode::NoSpace
                                        ? tr("The mirror's disk is full: %1. Finished files are "
                                             "kept: free some space and Stage goes on from them.")
                                              .arg(qs(r->status().message()))
                                        : qs(r->status().message());
                    m_mirrorStatus.clear();
                }
                emit stateChanged();
                emit progressChanged();
                emit mirrorFinished(m_mirrorState);
            },
            Qt::QueuedConnection);
    });
    m_progressTimer.start();
}

void WizardController::cancelMirror() {
    if (m_mirrorCancel) m_mirrorCancel->store(true);
}

} // namespace coli::app
