// The model wizard's controller without a window (app/wizard/): the pages in order and when Back
// and Next are enabled; the space rule (container + max(1 GiB, 5 %)) against the free space the
// real statvfs reports, and at the boundary through a file system that reports a chosen figure;
// a destination that already holds files; the converter in-process on the wizard's thread on a
// fixture checkpoint, with progress, cancel (held at a gate so it is deterministic), resume and a
// full disk; and Open, which loads the container through the engine and adds it to the Models
// list.
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"
#include "wizard/wizard_controller.h"
#include "wizard/wizard_source.h"
#include "wizard/wizard_space.h"

#include "convert/file_layer.h"
#include "convert/manifest.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <condition_variable>
#include <mutex>
#include <sys/statvfs.h>

using namespace coli;
using namespace coli::app;

namespace {
const QString kCheckpoint = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

// Holds the first file the converter creates until release(): a cancel can then be set while
// the conversion is known to be under way.
class GateFileSystem : public convert::FileSystem {
public:
    Result<std::unique_ptr<convert::WritableFile>> create(const std::string& path) override {
        {
            std::unique_lock lock(m_mutex);
            m_reached = true;
            m_cv.notify_all();
            m_cv.wait(lock, [this] { return m_open; });
        }
        return convert::posixFileSystem().create(path);
    }
    Result<std::unique_ptr<convert::WritableFile>> openAppend(const std::string& path) override {
        return convert::posixFileSystem().openAppend(path);
    }
    Status rename(const std::string& from, const std::string& to) override {
        return convert::posixFileSystem().rename(from, to);
    }
    Result<uint64_t> freeBytes(const std::string& dir) override {
        return convert::posixFileSystem().freeBytes(dir);
    }
    bool waitReached() {
        std::unique_lock lock(m_mutex);
        return m_cv.wait_for(lock, std::chrono::seconds(20), [this] { return m_reached; });
    }
    void release() {
        std::lock_guard lock(m_mutex);
        m_open = true;
        m_cv.notify_all();
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_reached = false, m_open = false;
};

bool waitFor(const std::function<bool()>& done, int ms = 30000) {
    return QTest::qWaitFor(done, ms);
}

// Chooses the fixture checkpoint and waits for its inspection and first space check. The margin
// is 0 (the default, 5 % of the disk, would let how full this machine's disk is decide the test);
// spaceCheckAgainstTheDisk puts the default back.
bool chooseFixture(WizardController& w) {
    w.setSpaceMargin(0);
    QSignalSpy inspected(&w, &WizardController::sourceInspected);
    w.chooseLocalFolder(kCheckpoint);
    return inspected.wait(30000) && waitFor([&] { return !w.busy(); });
}

bool chooseTarget(WizardController& w, const QString& dir) {
    QSignalSpy checked(&w, &WizardController::spaceChecked);
    w.chooseTargetParent(dir);
    return checked.wait(30000) && waitFor([&] { return !w.busy(); });
}

uint64_t statvfsFree(const QString& dir) {
    struct statvfs s {};
    if (statvfs(dir.toLocal8Bit().constData(), &s) != 0) return 0;
    return uint64_t(s.f_bavail) * uint64_t(s.f_frsize);
}
} // namespace

class TstWizardController : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void spaceRule();
    void pagesInOrderWithBackAndNext();
    void spaceCheckAgainstTheDisk();
    void destinationWithFilesIsRefused();
    void convertShowsProgressAndGivesAContainer();
    void convertCancelsAndResumes();
    void convertOnAFullDisk();
    void startOverDuringAConversion();
    void checkFindsAModelThatIsNotReady();
    void openLoadsTheModelAndListsIt();
    void planFollowsAReadyCheckAtTheSettingsBudget();
    void mirrorIsPlannedStagedAndChosen();

private:
    QTemporaryDir m_config;
};

void TstWizardController::initTestCase() {
    QVERIFY2(QFile::exists(kCheckpoint + "/config.json"),
             "fixtures missing: run the fixtures_generate test of the main build");
    qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8());
    // The plan and the mirror plan read the usage database: this run's own.
    qputenv("XDG_DATA_HOME", m_config.path().toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("Colibri"));
    QCoreApplication::setApplicationName(QStringLiteral("Colibri Desktop"));
}

void TstWizardController::spaceRule() {
    using namespace coli::app::wizard;
    const uint64_t GiB = uint64_t(1) << 30;
    QCOMPARE(spaceMargin(0), GiB);
    QCOMPARE(spaceMargin(10 * GiB), GiB);      // 5 % of a 10 GiB disk = 0.5 GiB < 1 GiB
    QCOMPARE(spaceMargin(100 * GiB), 5 * GiB); // 5 % wins
    QCOMPARE(spaceMargin(21), GiB);
    QCOMPARE(spaceMargin(30 * GiB + 21), 30 * GiB / 20 + 1); // hub::defaultSpaceMargin's
    const SpaceNeed n = spaceNeeded(40 * GiB, 20 * GiB, spaceMargin(1000 * GiB));
    QCOMPARE(n.margin, 50 * GiB);
    QCOMPARE(n.total, 110 * GiB);
    QTemporaryDir tmp;
    QCOMPARE(QString::fromStdString(existingAncestor((tmp.path() + "/not/yet").toStdString())),
             tmp.path());
    QCOMPARE(QString::fromStdString(bytesText(512)), QStringLiteral("512 bytes"));
    QCOMPARE(QString::fromStdString(bytesText(3 * GiB / 2)), QStringLiteral("1.5 GiB"));
}

void TstWizardController::pagesInOrderWithBackAndNext() {
    WizardController w(nullptr, nullptr);
    QCOMPARE(w.pageNames(),
             (QStringList{"search", "place", "download", "convert", "check", "mirror", "open"}));
    QCOMPARE(w.pageName(), QStringLiteral("search"));
    QVERIFY(!w.canBack());
    QVERIFY(!w.canNext());
    QVERIFY(w.nextHint().contains(QStringLiteral("Choose a model folder")));
    w.next(); // refused
    QCOMPARE(w.page(), 0);

    // The Hub as the source: Next waits for a repo (tst_wizard_hub searches a local Hub).
    w.setSourceKind(QStringLiteral("hub"));
    QVERIFY(w.tokenObject() != nullptr);
    QVERIFY(w.nextHint().contains(QStringLiteral("choose a repo")));
    QVERIFY(!w.canNext());

    // A folder on this computer.
    QVERIFY(chooseFixture(w));
    QCOMPARE(w.sourceKind(), QStringLiteral("local"));
    QVERIFY2(w.sourceError().isEmpty(), qPrintable(w.sourceError()));
    const QVariantMap src = w.source();
    QCOMPARE(src.value("supported").toBool(), true);
    QCOMPARE(src.value("architecture").toString(), QStringLiteral("Qwen3MoeForCausalLM"));
    QVERIFY(!src.value("experts").toString().isEmpty());
    QVERIFY(!src.value("parameters").toString().isEmpty());
    QVERIFY(w.canNext());
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("place"));
    QVERIFY(w.canBack());
    w.back();
    QCOMPARE(w.pageName(), QStringLiteral("search"));
    w.next();

    QTemporaryDir target;
    QVERIFY(chooseTarget(w, target.path()));
    QVERIFY(w.space().value("checked").toBool());
    QVERIFY2(w.canNext(), qPrintable(w.nextHint()));
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("download"));
    QVERIFY(w.canNext()); // already on this computer
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("convert"));
    QVERIFY(!w.canNext()); // not converted yet
    QVERIFY(w.nextHint().contains(QStringLiteral("Convert the model")));
    // Run as published: nothing to write, the folder itself opens.
    w.setConvertWanted(false);
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QVERIFY(w.space().value("writesNothing").toBool());
    QVERIFY(w.canNext());
    QCOMPARE(w.modelDir(), QDir::cleanPath(kCheckpoint));
    QSignalSpy checked(&w, &WizardController::checkFinished);
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("check"));
    // The doctor runs on arriving; Next waits for a model that is ready.
    QCOMPARE(w.checkState(), QStringLiteral("running"));
    QVERIFY(!w.canNext());
    QVERIFY(checked.wait(60000));
    QCOMPARE(w.checkState(), QStringLiteral("done"));
    QVERIFY2(w.checkReport().value("ready").toBool(), qPrintable(w.nextHint()));
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QVERIFY(w.canNext());
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("mirror"));
    QVERIFY(w.canNext()); // optional
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("open"));
    QVERIFY(!w.canNext()); // the last page
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("open"));
    QVERIFY(w.canBack());

    w.restart();
    QCOMPARE(w.page(), 0);
    QVERIFY(w.localDir().isEmpty());
    QVERIFY(!w.canNext());
}

void TstWizardController::spaceCheckAgainstTheDisk() {
    QTemporaryDir target;
    // The real disk: the free figure is statvfs's (other writers may move it a little).
    {
        WizardController w(nullptr, nullptr);
        QVERIFY(chooseFixture(w));
        w.setSpaceMargin(std::nullopt);
        QVERIFY(chooseTarget(w, target.path()));
        const double reported = w.space().value("freeBytes").toDouble();
        const double actual = double(statvfsFree(target.path()));
        QVERIFY(actual > 0);
        QVERIFY2(std::abs(reported - actual) <= 0.01 * actual,
                 qPrintable(QStringLiteral("%1 vs %2").arg(reported).arg(actual)));
        const auto planned =
            wizard::plannedContainerBytes(kCheckpoint.toStdString(), w.planOptions());
        QVERIFY(planned);
        const auto disk = wizard::diskBytesFor(target.path().toStdString());
        QVERIFY(disk);
        const auto need =
            wizard::spaceNeeded(0, planned.value(), wizard::spaceMargin(disk.value()));
        QCOMPARE(w.space().value("neededBytes").toDouble(), double(need.total));
        QCOMPARE(w.space().value("fits").toBool(), actual >= double(need.total));
    }
    // A file system that reports a chosen free figure: exactly what is needed fits, a byte less
    // does not, and Next says why.
    const auto planned = wizard::plannedContainerBytes(kCheckpoint.toStdString(), {});
    QVERIFY(planned);
    const auto disk = wizard::diskBytesFor(target.path().toStdString());
    QVERIFY(disk);
    const uint64_t needed =
        wizard::spaceNeeded(0, planned.value(), wizard::spaceMargin(disk.value())).total;
    for (const uint64_t free : {needed, needed - 1}) {
        convert::FaultyFileSystem fs(convert::posixFileSystem());
        fs.reportedFree = free;
        WizardController w(nullptr, nullptr);
        w.setFileSystem(&fs);
        QVERIFY(chooseFixture(w));
        w.setSpaceMargin(std::nullopt);
        w.next();
        QVERIFY(chooseTarget(w, target.path() + "/deeper/not-created-yet"));
        QCOMPARE(w.space().value("freeBytes").toDouble(), double(free));
        QCOMPARE(w.space().value("fits").toBool(), free >= needed);
        QCOMPARE(w.canNext(), free >= needed);
        if (free < needed)
            QVERIFY2(w.nextHint().contains(QStringLiteral("Not enough free space")),
                     qPrintable(w.nextHint()));
    }
}

void TstWizardController::destinationWithFilesIsRefused() {
    QTemporaryDir target;
    QVERIFY(QDir(target.path()).mkpath("qwen3moe-colibri"));
    QFile f(target.path() + "/qwen3moe-colibri/notes.txt");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("mine");
    f.close();
    WizardController w(nullptr, nullptr);
    QVERIFY(chooseFixture(w));
    w.next();
    QVERIFY(chooseTarget(w, target.path()));
    QVERIFY(w.space().value("error").toString().contains(QStringLiteral("already holds files")));
    QVERIFY(!w.canNext());
}

void TstWizardController::convertShowsProgressAndGivesAContainer() {
    QTemporaryDir target;
    WizardController w(nullptr, nullptr);
    QVERIFY(chooseFixture(w));
    QVERIFY(chooseTarget(w, target.path()));
    QSignalSpy progress(&w, &WizardController::progressChanged);
    QSignalSpy finished(&w, &WizardController::convertFinished);
    w.startConvert();
    QCOMPARE(w.convertState(), QStringLiteral("running"));
    QVERIFY(w.busy());
    QVERIFY(!w.canBack() || w.page() == 0);
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.first().first().toString(), QStringLiteral("done"));
    QVERIFY2(w.convertError().isEmpty(), qPrintable(w.convertError()));
    QVERIFY(progress.count() >= 2); // started, then the samples and the end
    QCOMPARE(w.convertProgress(), 1.0);
    QVERIFY(w.convertStatus().startsWith(QStringLiteral("Converted:")));
    const QString out = target.path() + "/qwen3moe-colibri";
    QCOMPARE(w.modelDir(), out);
    QVERIFY(convert::isContainerDir(out.toStdString()));
    QVERIFY(convert::openContainer(out.toStdString()));
    QVERIFY(waitFor([&] { return !w.busy(); }));
}

void TstWizardController::convertCancelsAndResumes() {
    QTemporaryDir target;
    GateFileSystem gate;
    WizardController w(nullptr, nullptr);
    w.setFileSystem(&gate);
    QVERIFY(chooseFixture(w));
    QVERIFY(chooseTarget(w, target.path()));
    QSignalSpy finished(&w, &WizardController::convertFinished);
    w.startConvert();
    QVERIFY(gate.waitReached()); // the converter is writing its first file
    w.cancelConvert();
    gate.release();
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.first().first().toString(), QStringLiteral("cancelled"));
    QCOMPARE(w.convertState(), QStringLiteral("cancelled"));
    QVERIFY(w.convertStatus().contains(QStringLiteral("kept")));
    QVERIFY(!w.canNext() || w.pageName() != QStringLiteral("convert"));
    QVERIFY(!convert::openContainer((target.path() + "/qwen3moe-colibri").toStdString()));
    // Convert again: the converter resumes in the same folder and finishes.
    finished.clear();
    w.startConvert();
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.first().first().toString(), QStringLiteral("done"));
    QVERIFY(convert::openContainer((target.path() + "/qwen3moe-colibri").toStdString()));
}

void TstWizardController::convertOnAFullDisk() {
    QTemporaryDir target;
    convert::FaultyFileSystem full(convert::posixFileSystem(), 4096); // full after 4 KiB
    WizardController w(nullptr, nullptr);
    w.setFileSystem(&full);
    QVERIFY(chooseFixture(w));
    QVERIFY(chooseTarget(w, target.path()));
    QSignalSpy finished(&w, &WizardController::convertFinished);
    w.startConvert();
    QVERIFY(finished.wait(60000));
    QCOMPARE(w.convertState(), QStringLiteral("failed"));
    QVERIFY2(w.convertError().contains(QStringLiteral("The disk is full")),
             qPrintable(w.convertError()));
}

void TstWizardController::startOverDuringAConversion() {
    QTemporaryDir target;
    GateFileSystem gate;
    WizardController w(nullptr, nullptr);
    w.setFileSystem(&gate);
    QVERIFY(chooseFixture(w));
    QVERIFY(chooseTarget(w, target.path()));
    w.startConvert();
    QVERIFY(gate.waitReached());
    w.restart(); // cancels it; its late answer must not bring the old state back
    gate.release();
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QCOMPARE(w.page(), 0);
    QCOMPARE(w.convertState(), QStringLiteral("idle"));
    QVERIFY(w.convertStatus().isEmpty());
    QVERIFY(w.localDir().isEmpty());
}

void TstWizardController::checkFindsAModelThatIsNotReady() {
    // A copy of the fixture whose tokenizer_config.json has no chat template: it converts, but
    // the wizard opens models for chat, so the doctor says it is not ready and Next waits.
    QTemporaryDir work;
    const QString src = work.path() + "/qwen3moe";
    QVERIFY(QDir().mkpath(src));
    for (const QString& f : QDir(kCheckpoint).entryList(QDir::Files)) {
        if (f == "tokenizer_config.json") {
            QFile in(kCheckpoint + "/" + f);
            QVERIFY(in.open(QIODevice::ReadOnly));
            QJsonObject o = QJsonDocument::fromJson(in.readAll()).object();
            o.remove("chat_template");
            QFile out(src + "/" + f);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(QJsonDocument(o).toJson());
        } else {
            QVERIFY(QFile::copy(kCheckpoint + "/" + f, src + "/" + f));
        }
    }
    WizardController w(nullptr, nullptr);
    QSignalSpy inspected(&w, &WizardController::sourceInspected);
    w.chooseLocalFolder(src);
    QVERIFY(inspected.wait(30000));
    QVERIFY(waitFor([&] { return !w.busy(); }));
    w.setConvertWanted(false); // run as published: straight to the check
    QVERIFY(waitFor([&] { return !w.busy(); }));
    for (int i = 0; i < 3; ++i) {
        QVERIFY2(w.canNext(), qPrintable(w.nextHint()));
        w.next();
    }
    QCOMPARE(w.pageName(), QStringLiteral("convert"));
    QSignalSpy checked(&w, &WizardController::checkFinished);
    w.next();
    QVERIFY(checked.wait(60000));
    QCOMPARE(w.checkState(), QStringLiteral("done"));
    QCOMPARE(w.checkReport().value("ready").toBool(), false);
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QVERIFY(!w.canNext());
    QVERIFY2(w.nextHint().contains(QStringLiteral("not ready")), qPrintable(w.nextHint()));
    bool named = false;
    for (const QVariant& f : w.checkReport().value("findings").toList())
        named = named || f.toMap().value("file").toString() == "tokenizer_config.json";
    QVERIFY2(named, "no finding names tokenizer_config.json");
}

void TstWizardController::openLoadsTheModelAndListsIt() {
    QTemporaryDir target;
    WorkerOptions wo;
    wo.threads = 1;
    EngineController engine(wo);
    AppSettings settings{QString()};
    connectSettings(&settings, &engine, 1);
    WizardController w(&engine, &settings);
    QVERIFY(chooseFixture(w));
    QVERIFY(chooseTarget(w, target.path()));
    QSignalSpy finished(&w, &WizardController::convertFinished);
    w.startConvert();
    QVERIFY(finished.wait(60000));
    QCOMPARE(w.convertState(), QStringLiteral("done"));
    const QString dir = w.modelDir();
    QVERIFY(w.openState().isEmpty());
    w.openModel();
    QVERIFY(waitFor(
        [&] {
            return w.openState() == QStringLiteral("ready") ||
                   w.openState() == QStringLiteral("error");
        },
        60000));
    QCOMPARE(w.openState(), QStringLiteral("ready"));
    QCOMPARE(engine.modelDir(), dir);
    bool listed = false;
    for (const QVariant& row : settings.models())
        listed = listed || row.toMap().value("path").toString() == dir;
    QVERIFY2(listed, "the opened model is not in the Models list");
    engine.shutdown();
}

// Runs the fixture as published up to the Check page and waits for the doctor.
bool reachCheckedModel(WizardController& w) {
    if (!chooseFixture(w)) return false;
    w.setConvertWanted(false);
    if (!waitFor([&] { return !w.busy(); })) return false;
    QSignalSpy checked(&w, &WizardController::checkFinished);
    for (int i = 0; i < 4; ++i)
        w.next();
    return w.pageName() == QStringLiteral("check") &&
           (checked.count() > 0 || checked.wait(60000)) && w.checkReport().value("ready").toBool();
}

void TstWizardController::planFollowsAReadyCheckAtTheSettingsBudget() {
    // A RAM budget below the working set: clamped up to it, so no expert fits beside it.
    AppSettings settings{QString()};
    settings.setRamBudgetMiB(1);
    {
        WizardController w(nullptr, &settings);
        QSignalSpy planned(&w, &WizardController::planFinished);
        QVERIFY(reachCheckedModel(w));
        QVERIFY(planned.count() > 0 || planned.wait(120000));
        QVERIFY2(w.planState() == QStringLiteral("done"),
                 qPrintable(w.planReport().value("error").toString()));
        const QVariantMap p = w.planReport();
        QVERIFY2(p.value("fitText").toString().startsWith(QStringLiteral("0 of ")),
                 qPrintable(p.value("fitText").toString()));
        QVERIFY2(p.value("hitRateText").toString().contains(QStringLiteral("no expert fits")),
                 qPrintable(p.value("hitRateText").toString()));
        QVERIFY(p.value("tokensPerSecond").toDouble() > 0);
        QVERIFY(p.value("expertsText").toString().contains(QStringLiteral("layers")));
        QVERIFY(p.value("speedText").toString().contains(QStringLiteral("tokens/s")));
        // Leaving the page cancels a running plan; coming back plans again.
        w.startPlan();
        QCOMPARE(w.planState(), QStringLiteral("running"));
        planned.clear();
        w.next();
        QCOMPARE(w.pageName(), QStringLiteral("mirror"));
        QVERIFY(planned.wait(120000));
        QVERIFY(w.planState() == QStringLiteral("cancelled") ||
                w.planState() == QStringLiteral("done")); // it may have ended first
    }
    // The default budget (from free memory): every expert of the tiny fixture fits.
    settings.setRamBudgetMiB(0);
    WizardController w(nullptr, &settings);
    QSignalSpy planned(&w, &WizardController::planFinished);
    QVERIFY(reachCheckedModel(w));
    QVERIFY(planned.count() > 0 || planned.wait(120000));
    QCOMPARE(w.planState(), QStringLiteral("done"));
    QVERIFY2(w.planReport().value("hitRateText").toString().startsWith(QStringLiteral("100.0 %")),
             qPrintable(w.planReport().value("hitRateText").toString()));
}

void TstWizardController::mirrorIsPlannedStagedAndChosen() {
    AppSettings settings{QString()};
    WizardController w(nullptr, &settings);
    QVERIFY(reachCheckedModel(w));
    w.next();
    QCOMPARE(w.pageName(), QStringLiteral("mirror"));
    QVERIFY(w.canNext()); // optional

    // A folder that does not exist: the plan says so, nothing is created.
    QTemporaryDir parent;
    const QString missing = parent.path() + "/no-such-folder";
    QSignalSpy planned(&w, &WizardController::mirrorPlanned);
    w.chooseMirrorFolder(missing);
    QVERIFY(planned.wait(30000));
    QVERIFY2(!w.mirrorPlan().value("error").toString().isEmpty(), "no error for a missing folder");
    QVERIFY(!QFileInfo::exists(missing));

    QTemporaryDir mirrorDir;
    planned.clear();
    w.chooseMirrorFolder(mirrorDir.path());
    QVERIFY(planned.wait(30000));
    QVERIFY(waitFor([&] { return !w.busy(); }));
    const QVariantMap plan = w.mirrorPlan();
    QVERIFY2(plan.value("error").toString().isEmpty(), qPrintable(plan.value("error").toString()));
    const int files = plan.value("fileCount").toInt();
    QVERIFY(files > 0);
    QCOMPARE(plan.value("sameDisk").toBool(), true); // both under the same temporary folder
    QVERIFY(plan.value("rankingText").toString().contains(QStringLiteral("no usage history")));

    QSignalSpy staged(&w, &WizardController::mirrorFinished);
    w.startMirror();
    QCOMPARE(w.mirrorState(), QStringLiteral("running"));
    QVERIFY(!w.canNext() && !w.canBack()); // staging: the page waits
    QVERIFY(staged.wait(60000));
    QVERIFY2(w.mirrorState() == QStringLiteral("done"), qPrintable(w.mirrorError()));
    QVERIFY(QFile::exists(mirrorDir.path() + "/colibri-mirror.json"));
    QCOMPARE(settings.mirrorFolder(), QDir::cleanPath(mirrorDir.path()));
    QVERIFY(waitFor([&] { return !w.busy(); }));
    QCOMPARE(w.mirrorPlan().value("staged").toBool(), true); // planned again: all there
    QCOMPARE(w.mirrorState(), QStringLiteral("done"));
    QVERIFY(w.canNext());
    // Staging again keeps every file (checked by hash), copies nothing.
    staged.clear();
    w.startMirror();
    QVERIFY(staged.wait(60000));
    QCOMPARE(w.mirrorState(), QStringLiteral("done"));
    QVERIFY2(w.mirrorStatus().contains(QStringLiteral("(0 copied, %1 kept").arg(files)),
             qPrintable(w.mirrorStatus()));
}

QTEST_GUILESS_MAIN(TstWizardController)
#include "tst_wizard_controller.moc"
