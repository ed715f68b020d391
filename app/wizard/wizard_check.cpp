// The wizard's Check page (docs/app.md "The model wizard"): the doctor (`coli doctor`,
// engine/doctor) on the model to open, then, once it is ready, the placement plan (`coli plan`,
// engine/placement/model_plan.h) at the app's RAM budget, each on the wizard's worker thread.
// Part of WizardController (wizard_controller.h).
#include "wizard/wizard_controller.h"

#include "wizard/wizard_text.h"

#include "app_settings.h"
#include "doctor/doctor.h"
#include "placement/model_plan.h"
#include "runtime/expert_budget.h"
#include "runtime/session.h"
#include "tiers/expert_cache.h"

#include <memory>

namespace coli::app {

using wizard::bytes;
using wizard::qs;

void WizardController::startCheck() {
    const QString dir = modelDir();
    if (dir.isEmpty() || m_checkState == QStringLiteral("running")) return;
    m_checkState = QStringLiteral("running");
    m_checkedDir = dir;
    m_checkReport.clear();
    m_checkStatus = tr("Checking…");
    m_checkSlot.publish(QString());
    emit stateChanged();
    emit progressChanged();
    doctor::DoctorOptions opt;
    opt.requireChatTemplate = true; // the wizard opens the model for chat
    const std::string d = dir.toStdString();
    ++m_jobs;
    m_checkCancel = m_worker->post([this, d, opt, dir](const std::atomic<bool>& cancel) {
        auto progress = [this](const doctor::DoctorProgress& p) {
            QString line = p.stage == "hashing"
                               ? tr("Hashing %1 (%2 of %3)")
                                     .arg(qs(p.file), bytes(p.bytesDone), bytes(p.bytesTotal))
                           : p.stage == "measuring" ? tr("Measuring the disk's read speed…")
                                                    : tr("Checking %1").arg(qs(p.file));
            m_checkSlot.publish(line);
        };
        auto r = std::make_shared<Result<doctor::DoctorReport>>(
            doctor::diagnoseModel(d, opt, progress, &cancel));
        QMetaObject::invokeMethod(
            this,
            [this, r, dir] {
                --m_jobs;
                m_progressTimer.stop();
                if (dir != m_checkedDir) { // another model meanwhile: this answer is stale
                    emit stateChanged();
                    return;
                }
                QVariantMap rep;
                if (r->isOk()) {
                    const doctor::DoctorReport& d = r->value();
                    m_checkState = QStringLiteral("done");
                    rep[QStringLiteral("ready")] = d.ready;
                    rep[QStringLiteral("kind")] =
                        QString::fromLatin1(doctor::modelKindName(d.kind));
                    rep[QStringLiteral("architecture")] = qs(d.architecture);
                    rep[QStringLiteral("weightFiles")] = d.weightFiles;
                    rep[QStringLiteral("filesChecked")] = d.filesChecked;
                    rep[QStringLiteral("chatTemplate")] = d.chatTemplate;
                    rep[QStringLiteral("errors")] = int(d.count(doctor::Severity::Error));
                    rep[QStringLiteral("warnings")] = int(d.count(doctor::Severity::Warning));
                    if (d.bandwidth)
                        rep[QStringLiteral("bandwidthText")] =
                            tr("%1/s (%2)")
                                .arg(bytes(uint64_t(d.bandwidth->bytesPerSecond)),
                                     d.bandwidth->directIo ? tr("direct reads")
                                                           : tr("buffered reads"));
                    QVariantList findings;
                    for (const doctor::Finding& f : d.findings)
                        findings << QVariantMap{
                            {QStringLiteral("severity"),
                             QString::fromLatin1(doctor::severityName(f.severity))},
                            {QStringLiteral("file"), qs(f.file)},
                            {QStringLiteral("problem"), qs(f.problem)},
                            {QStringLiteral("action"), qs(f.action)}};
                    rep[QStringLiteral("findings")] = findings;
                    m_checkStatus = d.ready ? tr("Ready to run.") : tr("Not ready.");
                } else if (r->status().code() == ErrorCode::Cancelled) {
                    m_checkState = QStringLiteral("cancelled");
                    m_checkStatus = tr("Check cancelled.");
                } else {
                    m_checkState = QStringLiteral("failed");
                    rep[QStringLiteral("error")] = qs(r->status().message());
                    m_checkStatus.clear();
                }
                m_checkReport = rep;
                emit stateChanged();
                emit progressChanged();
                emit checkFinished(m_checkState);
                // A ready model gets its placement plan (the check is the page's first half).
                if (m_checkState == QStringLiteral("done") &&
                    m_checkReport.value(QStringLiteral("ready")).toBool() &&
                    (m_planState != QStringLiteral("done") || m_plannedDir != dir))
                    startPlan();
            },
            Qt::QueuedConnection);
    });
    m_progressTimer.start();
}

void WizardController::cancelCheck() {
    if (m_checkCancel) m_checkCancel->store(true);
}

namespace {

// The plan's figures in words for the Check page (planReport's keys, wizard_controller.h).
QVariantMap planFigures(const placement::ModelPlanReport& r) {
    const placement::PlacementPlan& p = r.plan;
    const placement::PlanShape& s = p.shape;
    QVariantMap m;
    m[QStringLiteral("budgetText")] =
        QObject::tr("%1 for routed experts (%2 of it the working set)")
            .arg(bytes(p.budgetBytes), bytes(p.workingSetBytes));
    m[QStringLiteral("denseText")] = QObject::tr("%1, always in RAM").arg(bytes(s.denseBytes));
    m[QStringLiteral("expertsText")] =
        QObject::tr("%1 (%2 layers × %3, top-%4), %5 each, %6 in all")
            .arg(s.totalExperts())
            .arg(s.moeLayers)
            .arg(s.expertsPerLayer)
            .arg(s.topK)
            .arg(bytes(s.bytesPerExpert), bytes(s.expertBytes()));
    const double total = std::max(1, s.totalExperts());
    m[QStringLiteral("fitText")] = QObject::tr("%1 of %2 experts (%3 %)")
                                       .arg(p.expertsThatFit)
                                       .arg(s.totalExperts())
                                       .arg(100.0 * p.expertsThatFit / total, 0, 'f', 1);
    const char* source = placement::hitRateSourceName(p.hitRateSource);
    m[QStringLiteral("hitSource")] = QString::fromLatin1(source);
    m[QStringLiteral("hitRateText")] =
        QObject::tr("%1 % (%2)").arg(100.0 * p.hitRate, 0, 'f', 1).arg(qs(r.hitRateDetail));
    m[QStringLiteral("memoryPerTokenText")] = bytes(uint64_t(p.memBytesPerToken));
    m[QStringLiteral("diskPerTokenText")] = bytes(uint64_t(p.diskBytesPerToken));
    m[QStringLiteral("memoryRateText")] =
        QObject::tr("%1/s").arg(bytes(uint64_t(p.memBytesPerSecond)));
    m[QStringLiteral("diskRateText")] =
        QObject::tr("%1/s").arg(bytes(uint64_t(p.diskBytesPerSecond)));
    m[QStringLiteral("tokensPerSecond")] = p.tokensPerSecond;
    m[QStringLiteral("speedText")] =
        p.tokensPerSecond > 0
            ? QObject::tr("%1 tokens/s (%2 ms per token: memory %3 + disk %4)")
                  .arg(p.tokensPerSecond, 0, 'f',
                       p.tokensPerSecond < 10    ? 2
                       : p.tokensPerSecond < 100 ? 1
                                                 : 0)
                  .arg(1e3 * p.secondsPerToken, 0, 'f', p.secondsPerToken < 0.01 ? 2 : 1)
                  .arg(p.memBytesPerSecond > 0 ? 1e3 * p.memBytesPerToken / p.memBytesPerSecond
                                               : 0.0,
                       0, 'f', 1)
                  .arg(p.diskBytesPerSecond > 0 ? 1e3 * p.diskBytesPerToken / p.diskBytesPerSecond
                                                : 0.0,
                       0, 'f', 1)
            : QObject::tr("unknown (a rate could not be measured)");
    return m;
}

} // namespace

void WizardController::startPlan() {
    const QString dir = modelDir();
    if (dir.isEmpty() || m_planState == QStringLiteral("running")) return;
    m_planState = QStringLiteral("running");
    m_plannedDir = dir;
    m_planReport.clear();
    m_planStatus = tr("Loading the model to plan its placement…");
    m_planSlot.publish(QString());
    emit stateChanged();
    emit progressChanged();
    // The Settings' RAM budget for experts, as the engine applies it at load; 0 = from
    // MemAvailable.
    const uint64_t wanted = m_settings ? uint64_t(m_settings->ramBudgetMiB()) << 20 : 0;
    const std::string d = dir.toStdString();
    // Not counted in m_jobs: Back stays possible and leaving the page cancels the plan.
    m_planCancel = m_worker->post([this, d, dir, wanted,
                                   db = databasePath()](const std::atomic<bool>& cancel) {
        auto r = std::make_shared<Result<placement::ModelPlanReport>>(
            Status(ErrorCode::Cancelled, "cancelled"));
        ModelLoadOptions lo;
        lo.tiers.stream = true; // the plan is about streamed experts
        auto lm = LoadedModel::load(d, lo, {}, &cancel);
        if (!lm) {
            *r = lm.status();
        } else if (tiers::ExpertCache* cache = lm.value()->model().expertCache()) {
            // As the engine sets it at load, so the plan is the one Open will run.
            (void)cache->setBudget(chooseExpertBudget(*cache, wanted)); // in range: cannot fail
            placement::ModelPlanOptions po;
            po.cancel = &cancel;
            po.usageDb = db;
            po.progress = [this](const std::string& step) {
                m_planSlot.publish(step == "recording" ? tr("Running a short prompt to estimate "
                                                            "the hit rate…")
                                   : step == "memory"  ? tr("Measuring the memory's read speed…")
                                                       : tr("Measuring the disk's read speed…"));
            };
            *r = placement::planLoadedModel(*lm.value(), d, po);
        } else {
            *r = Status(ErrorCode::InvalidArgument, "the model's experts do not stream");
        }
        QMetaObject::invokeMethod(
            this,
            [this, r, dir] {
                if (dir != m_plannedDir || m_planState != QStringLiteral("running")) return;
                if (r->isOk()) {
                    m_planState = QStringLiteral("done");
                    m_planReport = planFigures(r->value());
                    m_planStatus = tr("Expected decode speed at your RAM budget:");
                } else if (r->status().code() == ErrorCode::Cancelled) {
                    m_planState = QStringLiteral("cancelled");
                    m_planStatus = tr("Plan cancelled.");
                } else {
                    m_planState = QStringLiteral("failed");
                    m_planReport[QStringLiteral("error")] =
                        tr("The placement plan failed: %1").arg(qs(r->status().message()));
                    m_planStatus.clear();
                }
                emit stateChanged();
                emit progressChanged();
                emit planFinished(m_planState);
            },
            Qt::QueuedConnection);
    });
    m_progressTimer.start();
}

void WizardController::cancelPlan() {
    if (m_planCancel) m_planCancel->store(true);
}

} // namespace coli::app
