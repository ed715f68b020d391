// The app with a mirror on a second disk (docs/mirror.md), in a real window under Xvfb: the
// Settings view's mirror folder reaches the next load; the Tiers view's disk card shows the bytes
// each disk served; removing the mirror folder between two answers gives the same answer, one
// notice, and the card says why the mirror is off. Screenshots (light and dark):
// screenshots/tiers-mirror-{light,dark}.png, tiers-mirror-off-{light,dark}.png,
// settings-mirror-{light,dark}.png.
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"

#include "convert/sha256.h"
#include "mirror/mirror_receipt.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

// A mirror of the fixture's one shard with its receipt (as `coli mirror stage` writes it).
bool makeMirror(const QString& dir) {
    const QString shard = QStringLiteral("model.safetensors");
    if (!QDir().mkpath(dir) || !QFile::copy(kModel + "/" + shard, dir + "/" + shard)) return false;
    Result<std::string> h = convert::sha256File((kModel + "/" + shard).toStdString());
    if (!h) return false;
    mirror::MirrorReceipt r;
    r.primary = kModel.toStdString();
    r.files.push_back({shard.toStdString(), uint64_t(QFileInfo(kModel + "/" + shard).size()), *h});
    return mirror::writeMirrorReceipt(dir.toStdString(), r).isOk();
}

struct Window {
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    // `view`: a QML type of the Colibri module given `controller` and `appSettings`.
    Window(const char* view, QObject* controller, QObject* settings) {
        engine = std::make_unique<QQmlApplicationEngine>();
        engine->addImportPath(QStringLiteral(COLI_QML_IMPORT_DIR));
        engine->setInitialProperties(
            {{QStringLiteral("controller"), QVariant::fromValue(controller)},
             {QStringLiteral("appSettings"), QVariant::fromValue(settings)}});
        engine->loadData(
            QByteArray("import QtQuick\nimport QtQuick.Controls\nimport Colibri\n"
                       "ApplicationWindow { id: w; property QtObject controller; "
                       "property QtObject appSettings; property bool dark: false; "
                       "width: 900; height: 640; visible: true; "
                       "Binding { target: Theme; property: \"dark\"; value: w.dark } ") +
            view + " { anchors.fill: parent; controller: w.controller" +
            (settings ? "; appSettings: w.appSettings } }" : " } }"));
        if (!engine->rootObjects().isEmpty())
            window = qobject_cast<QQuickWindow*>(engine->rootObjects().first());
    }
    template <class T = QQuickItem> T* find(const char* name) const {
        return window->findChild<T*>(QString::fromLatin1(name));
    }
    // Saves screenshots/NAME-light.png and NAME-dark.png.
    bool shoot(const QString& name) {
        const QString dir = QStringLiteral(COLI_BINARY_DIR "/screenshots");
        QDir().mkpath(dir);
        for (bool dark : {false, true}) {
            window->setProperty("dark", dark);
            QTest::qWait(500);
            const QImage img = window->grabWindow();
            if (!img.save(dir + "/" + name + (dark ? "-dark.png" : "-light.png"))) return false;
        }
        window->setProperty("dark", false);
        return true;
    }
};

QString answer(EngineController& c) {
    QSignalSpy done(&c, &EngineController::answerFinished);
    if (!c.send(QStringLiteral("Tell me about the sea."))) return {};
    if (done.isEmpty() && !done.wait(60000)) return {};
    ChatModel* chat = c.chatModel();
    return chat->at(chat->rowCount() - 1).text;
}
} // namespace

class TestMirrorReadsView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY(m_config.isValid());
        qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8());
    }

    void settingsChooseTheMirrorForTheNextLoad() {
        QTemporaryDir tmp;
        const QString mirrorDir = tmp.path() + "/mirror";
        QVERIFY(makeMirror(mirrorDir));
        AppSettings settings(kModel);
        settings.setMirrorFolder(QString());
        QVERIFY(!settings.isMirrorFolder(tmp.path()));
        QVERIFY(settings.isMirrorFolder(mirrorDir));
        settings.setMirrorFolder(mirrorDir); // as the folder browser's "Use this folder" does
        QVERIFY(settings.reloadNeeded());
        QCOMPARE(settings.loadSettings(1).mirrorDir, mirrorDir.toStdString());
        EngineController controller(WorkerOptions{.threads = 1});
        Window w("SettingsView", &controller, &settings);
        QVERIFY(w.window);
        QVERIFY(QTest::qWaitForWindowExposed(w.window));
        auto* label = w.find<QObject>("mirrorFolderSetting");
        QVERIFY(label);
        QCOMPARE(label->property("text").toString(), mirrorDir);
        QVERIFY(w.find<QObject>("mirrorFolderChoose"));
        QVERIFY(w.find<QObject>("mirrorFolderClear")->property("visible").toBool());
        QVERIFY(w.shoot(QStringLiteral("settings-mirror")));
        settings.setMirrorFolder(QString()); // Clear
        QCOMPARE(label->property("text").toString(), QStringLiteral("none"));
        QCOMPARE(settings.loadSettings(1).mirrorDir, std::string());
        controller.shutdown();
    }

    void tiersViewShowsBytesPerDiskAndTheSwitchOff() {
        QString reference;
        {
            EngineController ref(WorkerOptions{.threads = 1});
            GenerateParams p;
            p.maxNewTokens = 40;
            SamplingOverrides s;
            s.temperature = 0;
            ref.setGenerateParams(p, s);
            ref.loadModel(kModel);
            QTRY_COMPARE_WITH_TIMEOUT(ref.loadState(), QStringLiteral("ready"), 60000);
            reference = answer(ref);
            QVERIFY(!reference.isEmpty());
            ref.shutdown();
        }
        QTemporaryDir tmp;
        const QString mirrorDir = tmp.path() + "/mirror";
        QVERIFY(makeMirror(mirrorDir));
        // The smallest budget (clamped up to the working set): experts are read again and again.
        EngineController c(WorkerOptions{.threads = 1, .expertBudgetBytes = 1});
        GenerateParams p;
        p.maxNewTokens = 40;
        SamplingOverrides s;
        s.temperature = 0;
        c.setGenerateParams(p, s);
        LoadSettings ls;
        ls.threads = 1;
        ls.mirrorDir = mirrorDir.toStdString();
        c.setLoadSettings(ls);
        Window w("TiersView", &c, nullptr);
        QVERIFY(w.window);
        QVERIFY(QTest::qWaitForWindowExposed(w.window));
        c.loadModel(kModel);
        QTRY_COMPARE_WITH_TIMEOUT(c.loadState(), QStringLiteral("ready"), 60000);
        TierMonitor* tiers = c.tiers();
        QTRY_VERIFY_WITH_TIMEOUT(tiers->mirrorActive(), 5000);
        QCOMPARE(tiers->mirrorDir(), mirrorDir);
        QCOMPARE(answer(c), reference);
        QTRY_VERIFY_WITH_TIMEOUT(tiers->mirrorBytesSession() > 0, 5000);
        QVERIFY(tiers->primaryBytesSession() > 0);
        QTest::qWait(300); // the monitor's ~30 Hz sample reaches the labels
        auto* mirrorReads = w.find<QObject>("mirrorReads");
        QVERIFY(mirrorReads);
        QVERIFY(mirrorReads->property("visible").toBool());
        QVERIFY(mirrorReads->property("text").toString().contains("MiB"));
        QVERIFY(w.shoot(QStringLiteral("tiers-mirror")));

        // The folder goes away between two answers: the same answer, one notice.
        QVERIFY(QDir(mirrorDir).removeRecursively());
        int notices = 0; // the switch-off notices shown
        QObject::connect(&c, &EngineController::errorTextChanged, &c, [&] {
            // showNotice emits twice (text, then kind "info"): count the second.
            notices += c.noticeKind() == QStringLiteral("info") &&
                       c.errorText().contains(QStringLiteral("switched off"));
        });
        c.newChat();
        QCOMPARE(answer(c), reference);
        QTRY_VERIFY_WITH_TIMEOUT(!tiers->mirrorProblem().isEmpty(), 5000);
        QVERIFY(tiers->mirrorProblem().contains(QStringLiteral("removed or unmounted")));
        QTRY_COMPARE_WITH_TIMEOUT(notices, 1, 5000);
        auto* info = w.find<QObject>("mirrorInfo");
        QVERIFY(info);
        QVERIFY(info->property("text").toString().contains(QStringLiteral("switched off")));
        QVERIFY(w.shoot(QStringLiteral("tiers-mirror-off")));
        c.shutdown();
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestMirrorReadsView)
#include "tst_mirror_reads_view.moc"
