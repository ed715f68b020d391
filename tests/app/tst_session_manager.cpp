// Persistent sessions through the real EngineController and storage thread (no window): a chat
// is saved as it happens (title from the first message, user message at send, answer with its
// run at the end), the list restores at restart with the last session on screen, rename,
// search, delete, export, streaming saves during an answer, and a damaged database gives one
// banner while the chat keeps working, and each chat's KV cache on disk: restarts after every
// answer continue as one app would (same answers and reused tokens), sizes in the list, the cap,
// delete. The list model runs under QAbstractItemModelTester.
#include "session_manager.h"

#include "model/config.h"
#include "runtime/session_kv_dir.h"
#include "runtime/session_kv_file.h"
#include "storage/model_identity.h"
#include "storage/sessions.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <optional>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");
const QString kShippedModel = QStringLiteral(COLI_SHIPPED_MODEL_DIR); // 512 tokens of context

struct Rig {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<SessionManager> sessions;
    std::unique_ptr<QAbstractItemModelTester> tester;

    explicit Rig(const QString& db, int maxTokens = 12, const QString& model = kModel) {
        controller = std::make_unique<EngineController>(WorkerOptions{.threads = 1});
        GenerateParams p;
        p.maxNewTokens = maxTokens;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
        sessions = std::make_unique<SessionManager>(controller.get(),
                                                    StorageWorkerOptions{.path = db.toStdString()});
        tester = std::make_unique<QAbstractItemModelTester>(
            sessions->sessions(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        controller->loadModel(model);
    }
    ~Rig() {
        sessions->shutdown();
        controller->shutdown();
        tester.reset();
        sessions.reset();
    }
    bool ready() {
        return QTest::qWaitFor([&] { return controller->loadState() != "loading"; }, 60000) &&
               controller->loadState() == "ready";
    }
    bool ask(const QString& text) {
        QSignalSpy done(controller.get(), &EngineController::answerFinished);
        return controller->send(text) && done.wait(60000);
    }
    // Waits until the storage thread has run everything posted so far.
    bool settle() {
        return QTest::qWaitFor([&] { return sessions->worker()->pending() == 0; }, 10000) &&
               (QTest::qWait(50), true);
    }
};

// The folder of the database's KV files, as the engine names it.
QString kvDirOf(const QString& db) {
    return QFileInfo(QString::fromStdString(sessionKvDir(db.toStdString()))).absoluteFilePath();
}

// The database as another connection sees it.
struct Peek {
    std::unique_ptr<storage::Storage> db;
    std::unique_ptr<storage::SessionStore> ss;
    explicit Peek(const QString& path) {
        db = std::move(storage::Storage::open(path.toStdString()).value());
        ss = std::make_unique<storage::SessionStore>(*db);
    }
};
} // namespace

class TestSessionManager : public QObject {
    Q_OBJECT
private slots:
    void titleFromTheFirstLine() {
        QCOMPARE(SessionManager::titleFrom("  Hello there\nsecond line"), QString("Hello there"));
        const QString t = SessionManager::titleFrom(QString(100, QChar('x')));
        QCOMPARE(t.size(), 60);
        QVERIFY(t.endsWith(QChar(0x2026)));
        QCOMPARE(SessionManager::titleFrom("   "), QString("New chat"));
    }

    void aChatIsSavedAndComesBackAfterARestart() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        QString answer1, answer2;
        {
            Rig r(db);
            QVERIFY(r.ready());
            QVERIFY(r.ask("What is the sea like?"));
            answer1 = r.controller->chatModel()->at(1).text;
            QVERIFY(r.ask("And the ships?"));
            answer2 = r.controller->chatModel()->at(3).text;
            QVERIFY(r.settle());
            QCOMPARE(r.sessions->sessions()->rowCount(), 1);
            QVERIFY(r.sessions->currentSessionId() > 0);
            QCOMPARE(r.sessions->currentTitle(), QString("What is the sea like?"));
            QVERIFY(r.controller->contextUsed() > 0); // the context meter
            // The model details panel's values.
            const QVariantMap d = r.controller->modelDetails();
            QCOMPARE(d.value("architecture").toString(), QString("Qwen3MoeForCausalLM"));
            QVERIFY(d.value("totalParams").toDouble() > d.value("activeParams").toDouble());
            QVERIFY(d.value("activeParams").toDouble() > 0);
            QVERIFY(d.value("expertsPerLayer").toInt() > 0);
            QVERIFY(d.value("contextLength").toInt() > 0);
            QVERIFY(d.value("diskBytes").toDouble() > 0);
            QVERIFY(!d.value("storage").toString().isEmpty());
            // A second chat goes on top of the list; its context meter starts empty.
            r.sessions->newSession();
            QCOMPARE(r.controller->contextUsed(), 0);
            QCOMPARE(r.controller->chatModel()->rowCount(), 0);
            QVERIFY(r.ask("Another topic"));
            QVERIFY(r.settle());
            QCOMPARE(r.sessions->sessions()->rowCount(), 2);
            QCOMPARE(r.sessions->sessions()->at(0).title, QString("Another topic"));
            // Back to the first one: it becomes the last session shown.
            r.sessions->openSession(r.sessions->sessions()->at(1).id);
            QSignalSpy opened(r.sessions.get(), &SessionManager::sessionOpened);
            QVERIFY(opened.wait(10000));
            QCOMPARE(r.controller->chatModel()->rowCount(), 4);
        }
        {
            Peek p(db);
            auto list = p.ss->listSessions().value();
            QCOMPARE(int(list.size()), 2);
            const auto& first = list[1].title == "What is the sea like?" ? list[1] : list[0];
            auto msgs = p.ss->loadMessages(first.id).value();
            QCOMPARE(int(msgs.size()), 4);
            QCOMPARE(QString::fromStdString(msgs[1].text), answer1);
            QVERIFY(msgs[1].stopReason.has_value());
            QVERIFY(msgs[1].run.has_value());
            QCOMPARE(p.ss->loadRuns(first.id).value().size(), size_t(2));
            QVERIFY(!p.ss->loadRuns(first.id).value()[0].tokensPerSecond == 0 ||
                    p.ss->loadRuns(first.id).value()[0].generatedTokens > 0);
        }
        {
            // The app learned: the model's expert heat is in the database.
            auto st = storage::Storage::open(db.toStdString());
            QVERIFY(st.isOk());
            auto identity = storage::modelIdentity(kModel.toStdString(), st.value().get());
            QVERIFY(identity.isOk());
            auto model = st.value()->findModel(*identity);
            QVERIFY(model.isOk() && model->has_value());
            QVERIFY(!st.value()->loadHeat(**model).value().empty());
        }
        // Restart: the list and the last session shown come back, and the learned experts are
        // pinned before the first answer.
        Rig r(db);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.controller->tiers()->pinnedExperts() > 0, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(r.controller->chatModel()->rowCount(), 4, 10000);
        QCOMPARE(r.controller->chatModel()->at(1).text, answer1);
        QCOMPARE(r.controller->chatModel()->at(3).text, answer2);
        QCOMPARE(r.sessions->sessions()->rowCount(), 2);
        QCOMPARE(r.sessions->currentTitle(), QString("What is the sea like?"));
        QVERIFY(r.controller->contextUsed() > 0); // estimated for the reopened chat
        // The conversation goes on from the restored messages.
        QVERIFY(r.ask("Tell me more"));
        QCOMPARE(r.controller->chatModel()->rowCount(), 6);
    }

    // A chat past its model's context, reopened after a restart: the meter estimates what its
    // last turn held with the rolling window's rule, close to what the live meter read, instead
    // of the whole conversation capped at the context (it read 512 / 512, in red).
    void reopenedChatPastItsContextMetersLikeTheLiveOne() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        int liveUsed = 0, liveDropped = 0, rows = 0;
        {
            Rig r(db, 24, kShippedModel);
            QVERIFY(r.ready());
            QString request;
            for (int i = 0; i < 8; ++i)
                request += QStringLiteral("Tell me about the sea, the wind and the stars. ");
            for (int turn = 0; turn < 14 && r.controller->contextDropped() == 0; ++turn)
                QVERIFY(r.ask(request + QString::number(turn)));
            liveUsed = r.controller->contextUsed();
            liveDropped = r.controller->contextDropped();
            QVERIFY2(liveDropped > 0, "the chat never outgrew the context");
            rows = r.controller->chatModel()->rowCount();
            QVERIFY(r.settle());
        }
        Rig r(db, 24, kShippedModel);
        QVERIFY(r.ready());
        QTRY_COMPARE_WITH_TIMEOUT(r.controller->chatModel()->rowCount(), rows, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(r.controller->contextUsed() > 0, 10000);
        const int used = r.controller->contextUsed(), dropped = r.controller->contextDropped();
        qInfo("live: %d tokens, %d messages left out; reopened: %d, %d (context %d)", liveUsed,
              liveDropped, used, dropped, r.controller->contextLength());
        QVERIFY(used < r.controller->contextLength());
        QVERIFY(dropped > 0);
        QVERIFY2(std::abs(used - liveUsed) <= liveUsed / 5, "the estimate is off by over 20 %");
        QVERIFY2(std::abs(dropped - liveDropped) <= 2, "more than one exchange apart");
    }

    void renameSearchDeleteExport() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        Rig r(db);
        QVERIFY(r.ready());
        QVERIFY(r.ask("Lighthouses on rocky coasts"));
        r.sessions->newSession();
        QVERIFY(r.ask("Recipes with lentils"));
        QVERIFY(r.settle());
        QCOMPARE(r.sessions->sessions()->rowCount(), 2);
        const qint64 lentils = r.sessions->sessions()->at(0).id;
        const qint64 coast = r.sessions->sessions()->at(1).id;
        r.sessions->renameSession(coast, "Coast notes");
        QCOMPARE(r.sessions->sessions()->at(1).title, QString("Coast notes"));
        r.sessions->setSearchText("lighthouse");
        QTRY_COMPARE_WITH_TIMEOUT(r.sessions->sessions()->rowCount(), 1, 10000);
        QCOMPARE(r.sessions->sessions()->at(0).id, coast);
        QVERIFY(r.sessions->sessions()->at(0).snippet.contains(QStringLiteral("«")));
        r.sessions->setSearchText("");
        QTRY_COMPARE_WITH_TIMEOUT(r.sessions->sessions()->rowCount(), 2, 10000);

        QSignalSpy exported(r.sessions.get(), &SessionManager::exported);
        const QString md = dir.filePath("coast.md"), js = dir.filePath("coast.json");
        r.sessions->exportSession(coast, QUrl::fromLocalFile(md), "markdown");
        r.sessions->exportSession(coast, QUrl::fromLocalFile(js), "json");
        QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 2, 10000);
        QCOMPARE(exported[0][1].toString(), QString());
        QFile f(md);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.contains("Coast notes"));
        QVERIFY(text.contains("Lighthouses on rocky coasts"));
        QFile j(js);
        QVERIFY(j.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(j.readAll()).object();
        QCOMPARE(o.value("format").toString(), QString("colibri-session"));
        // A folder that does not exist: the error says which file and why.
        const QString missing = dir.filePath("no-such-folder/coast.md");
        r.sessions->exportSession(coast, QUrl::fromLocalFile(missing), "markdown");
        QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 3, 10000);
        const QString error = exported[2][1].toString();
        QVERIFY2(error.startsWith(QStringLiteral("could not write %1: ").arg(missing)) &&
                     error.size() > QStringLiteral("could not write %1: ").arg(missing).size(),
                 qPrintable(error));
        QVERIFY(!QFileInfo::exists(missing));

        r.sessions->deleteSession(lentils); // the one on screen
        QCOMPARE(r.controller->chatModel()->rowCount(), 0);
        QCOMPARE(r.sessions->sessions()->rowCount(), 1);
        QVERIFY(r.settle());
        Peek p(db);
        QCOMPARE(int(p.ss->listSessions().value().size()), 1);
        QCOMPARE(p.ss->listSessions().value()[0].title, std::string("Coast notes"));
    }

    // The export dialog's file name keeps every script's letters and drops what file systems
    // refuse; it starts in the documents folder, or home when a fresh account has none.
    void exportNameAndFolder() {
        QTemporaryDir dir;
        EngineController controller(WorkerOptions{.threads = 1}); // no model: names only
        SessionManager sessions(&controller,
                                StorageWorkerOptions{.path = dir.filePath("c.db").toStdString()});
        QCOMPARE(sessions.exportFileName(QStringLiteral("Erzähl mir was"), "markdown"),
                 QStringLiteral("Erzähl mir was.md"));
        QCOMPARE(sessions.exportFileName(QStringLiteral("你好 🙂"), "json"),
                 QStringLiteral("你好 🙂.json"));
        QCOMPARE(
            sessions.exportFileName(QStringLiteral("a/b\\c: *why?* <\"x\"> |\t tab"), "markdown"),
            QStringLiteral("abc why x tab.md"));
        QCOMPARE(sessions.exportFileName(QStringLiteral("..hidden"), "markdown"),
                 QStringLiteral("hidden.md"));
        QCOMPARE(sessions.exportFileName(QStringLiteral(" /:? "), "json"),
                 QStringLiteral("chat.json"));
        // '#' and '%' stay in the name, not in the URL's syntax.
        const QUrl url = sessions.exportFile(QStringLiteral("C# at 100%"), "markdown");
        QVERIFY(url.isLocalFile());
        QCOMPARE(QFileInfo(url.toLocalFile()).fileName(), QStringLiteral("C# at 100%.md"));

        const QByteArray oldConfig = qgetenv("XDG_CONFIG_HOME");
        QVERIFY(qputenv("XDG_CONFIG_HOME", dir.path().toLocal8Bit()));
        const QString docs = dir.filePath("Dokumente");
        QFile dirs(dir.filePath("user-dirs.dirs"));
        QVERIFY(dirs.open(QIODevice::WriteOnly));
        dirs.write("XDG_DOCUMENTS_DIR=\"" + docs.toUtf8() + "\"\n");
        dirs.close();
        QCOMPARE(sessions.exportFolder(), QUrl::fromLocalFile(QDir::homePath())); // not made yet
        QVERIFY(QDir().mkpath(docs));
        QCOMPARE(sessions.exportFolder(), QUrl::fromLocalFile(docs));
        QCOMPARE(sessions.exportFile(QStringLiteral("Notes"), "json"),
                 QUrl::fromLocalFile(docs + "/Notes.json"));
        if (oldConfig.isNull())
            qunsetenv("XDG_CONFIG_HOME");
        else
            qputenv("XDG_CONFIG_HOME", oldConfig);
        sessions.shutdown();
        controller.shutdown();
    }

    void regenerateContinueEditAndChatSettings() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        qint64 chat = 0;
        {
            Rig r(db, 6);
            QVERIFY(r.ready());
            QVERIFY(r.ask("Once upon a time"));
            ChatModel* m = r.controller->chatModel();
            QCOMPARE(m->at(1).stopReason, QString("max tokens"));
            QVERIFY(m->data(m->index(1), ChatModel::CanContinueRole).toBool());
            QVERIFY(m->at(1).hitRate >= 0); // the fixture streams its experts: measured
            const QString first = m->at(1).text;
            // Continue: the same row grows from where it stopped.
            QSignalSpy done(r.controller.get(), &EngineController::answerFinished);
            QVERIFY(r.controller->continueAnswer());
            QVERIFY(done.wait(60000));
            QCOMPARE(m->rowCount(), 2);
            QVERIFY(m->at(1).text.startsWith(first));
            QVERIFY(m->at(1).text.size() > first.size());
            const QString continued = m->at(1).text;
            QVERIFY(r.settle());
            chat = r.sessions->currentSessionId();
            {
                Peek p(db);
                auto msgs = p.ss->loadMessages(chat).value();
                QCOMPARE(int(msgs.size()), 2);
                QCOMPARE(QString::fromStdString(msgs[1].text), continued);
            }
            // Regenerate: the answer row is replaced, with a new seed (the chat fixes none).
            QVERIFY(r.controller->regenerate());
            QVERIFY(done.wait(60000));
            QCOMPARE(m->rowCount(), 2);
            QVERIFY(r.settle());
            {
                Peek p(db);
                auto msgs = p.ss->loadMessages(chat).value();
                QCOMPARE(int(msgs.size()), 2);
                QCOMPARE(QString::fromStdString(msgs[1].text), m->at(1).text);
                QVERIFY(msgs[1].seed.has_value());
            }
            // Edit and resend: the user message is replaced and what followed it goes.
            QVERIFY(r.controller->editAndResend(0, "A new beginning"));
            QVERIFY(done.wait(60000));
            QCOMPARE(m->rowCount(), 2);
            QCOMPARE(m->at(0).text, QString("A new beginning"));
            // The chat's own settings: saved with it and back after a restart.
            r.sessions->setChatSettings(
                {{"systemPrompt", "Answer in verse."}, {"temperature", 0.5}, {"seed", "42"}});
            QCOMPARE(r.controller->systemPrompt(), QString("Answer in verse."));
            QVERIFY(r.settle());
            Peek p(db);
            auto msgs = p.ss->loadMessages(chat).value();
            QCOMPARE(int(msgs.size()), 2);
            QCOMPARE(msgs[0].text, std::string("A new beginning"));
            auto info = p.ss->session(chat).value();
            QCOMPARE(info.systemPrompt, std::string("Answer in verse."));
            QCOMPARE(info.seed, std::optional<uint64_t>(42));
            QCOMPARE(info.sampling.temperature, std::optional<double>(0.5));
        }
        Rig r(db, 6);
        QVERIFY(r.ready());
        QTRY_COMPARE_WITH_TIMEOUT(r.sessions->currentSessionId(), chat, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(r.controller->systemPrompt(), QString("Answer in verse."), 10000);
        QCOMPARE(r.sessions->chatSettings().value("seed").toString(), QString("42"));
        // A new chat starts from the app's settings.
        r.sessions->newSession();
        QCOMPARE(r.controller->systemPrompt(), QString());
    }

    void forgetLearnedUsageRunsOnTheStorageThreadAndStopsSaving() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        Rig r(db);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000); // the model's row is known
        QVERIFY(r.ask("What is the sea like?"));
        QVERIFY(r.settle());
        auto heat = [&] {
            auto st = storage::Storage::open(db.toStdString());
            auto identity = storage::modelIdentity(kModel.toStdString(), st.value().get());
            auto model = st.value()->findModel(*identity);
            return model->has_value() ? st.value()->loadHeat(**model).value().size() : size_t(0);
        };
        QVERIFY(heat() > 0);
        QString message;
        r.sessions->forgetUsage(kModel, [&](const QString& m) { message = m; });
        QTRY_VERIFY_WITH_TIMEOUT(!message.isEmpty(), 10000);
        QVERIFY2(message.startsWith("Forgot"), qPrintable(message));
        QCOMPARE(heat(), size_t(0));
        QVERIFY(!r.sessions->learning());
        // This load no longer saves its usage: forgotten stays forgotten.
        QVERIFY(r.ask("And the ships?"));
        QVERIFY(r.settle());
        QCOMPARE(heat(), size_t(0));
    }

    void aChatHeldWithAnotherModelOffersToLoadIt() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        // A copy of a second fixture model in a folder that will be removed later.
        const QString other = dir.filePath("mixtral-copy");
        QVERIFY(QDir().mkpath(other));
        for (const QFileInfo& f :
             QDir(QStringLiteral(COLI_FIXTURE_DIR "/mixtral")).entryInfoList(QDir::Files))
            QVERIFY(QFile::copy(f.filePath(), other + "/" + f.fileName()));
        Rig r(db);
        QVERIFY(r.ready());
        // Asked at once: the model's identity may come after the chat is created (recorded then).
        QVERIFY(r.ask("Held with the first model"));
        QVERIFY(r.settle());
        const qint64 first = r.sessions->currentSessionId();
        // Another model: the chat is cleared; reopening the first chat says it was held with
        // the other model and offers to load it.
        r.controller->loadModel(other);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000);
        QVERIFY(r.sessions->modelNotice().isEmpty());
        r.sessions->openSession(first);
        QTRY_VERIFY_WITH_TIMEOUT(!r.sessions->modelNotice().isEmpty(), 10000);
        QVERIFY(r.sessions->modelNotice().contains(kModel));
        QVERIFY(r.sessions->canLoadSessionModel());
        r.sessions->loadSessionModel();
        QTRY_COMPARE_WITH_TIMEOUT(r.controller->modelDir(), QDir::cleanPath(kModel), 10000);
        QVERIFY(r.ready());
        QTRY_COMPARE_WITH_TIMEOUT(r.sessions->currentSessionId(), first, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->modelNotice().isEmpty(), 10000);
        QCOMPARE(r.controller->chatModel()->rowCount(), 2);
        // A chat held with a model whose folder is gone says so, without the offer.
        r.sessions->newSession();
        r.controller->loadModel(other);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000);
        QVERIFY(r.ask("Held with the copy"));
        QVERIFY(r.settle());
        const qint64 second = r.sessions->currentSessionId();
        r.controller->loadModel(kModel);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000);
        QVERIFY(QDir(other).removeRecursively());
        r.sessions->openSession(second);
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->modelNotice().contains("gone"), 10000);
        QVERIFY(!r.sessions->canLoadSessionModel());
    }

    void anAnswerIsSavedWhileItStreams() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        Rig r(db, 400);
        r.sessions->setStreamSaveInterval(30);
        QVERIFY(r.ready());
        GenerateParams p = r.controller->generateParams();
        p.ignoreEos = true;
        r.controller->setGenerateParams(p, r.controller->sampling());
        QSignalSpy done(r.controller.get(), &EngineController::answerFinished);
        QVERIFY(r.controller->send("Write a long story"));
        // While it streams, another connection sees the answer's text before its end (no stop
        // reason yet), growing from one save to the next.
        Peek peek(db);
        size_t seen = 0;
        int partial = 0;
        while (done.isEmpty() && done.wait(20) == false) {
            auto list = peek.ss->listSessions();
            if (!list || list->empty()) continue;
            auto msgs = peek.ss->loadMessages((*list)[0].id);
            if (!msgs || msgs->size() < 2) continue;
            const storage::MessageRecord& a = (*msgs)[1];
            if (!a.stopReason && a.text.size() > seen) {
                seen = a.text.size();
                ++partial;
            }
        }
        QVERIFY2(partial >= 1, "no save of the answer was seen while it streamed");
        QVERIFY(r.settle());
        auto msgs = peek.ss->loadMessages(peek.ss->listSessions().value()[0].id).value();
        QCOMPARE(QString::fromStdString(msgs[1].text), r.controller->chatModel()->at(1).text);
    }

    void aDamagedDatabaseGivesOneBannerAndTheChatGoesOn() {
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        {
            QFile f(db);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray(8192, 'z'));
        }
        Rig r(db);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(!r.sessions->storageProblem().isEmpty(), 10000);
        QVERIFY(r.sessions->storageProblem().contains(db));
        QVERIFY(r.ask("Still working?"));
        QCOMPARE(r.controller->chatModel()->rowCount(), 2);
        QFile f(db);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray(8192, 'z'));
        QVERIFY(r.settle());
        QVERIFY(!QDir(QString::fromStdString(sessionKvDir(db.toStdString()))).exists());
    }

    // The KV cache on disk (docs/app.md "Sessions"): a chat whose app is closed and started
    // again after every answer gives the same answers and reuses the same prompt tokens per
    // turn as the same chat in one app; the size is in the list and the toolbar's text; the file
    // goes with the chat; the cap deletes another chat's file and its row says so.
    void kvCacheSurvivesRestartsAndGoesWithTheChat() {
        const QStringList questions = {"What is the sea like?", "And the ships?",
                                       "Which one is the fastest?"};
        struct Turn {
            QString answer;
            qint64 reused = -1, prompt = -1, generated = -1;
            // The file after it: the header and a record per token the engine holds (the prompt
            // and every sampled token but the last).
            qint64 kvBytes() const {
                auto cfg = loadConfig(kModel.toStdString());
                const uint64_t rec =
                    SessionKvFile::recordBytes(SessionKvKey{"m", "w", cfg->nLayers, kvShape(*cfg)});
                return qint64(SessionKvFile::kHeaderBytes + uint64_t(prompt + generated - 1) * rec);
            }
        };
        auto turn = [](Rig& r, const QString& q) {
            Turn t;
            std::optional<storage::RunRecord> run;
            const auto c = QObject::connect(r.sessions.get(), &SessionManager::runAdded,
                                            [&](const storage::RunRecord& x) { run = x; });
            const bool answered = r.ask(q);
            QObject::disconnect(c);
            if (!answered || !run) return t;
            t.answer =
                r.controller->chatModel()->at(r.controller->chatModel()->rowCount() - 1).text;
            t.reused = run->reusedTokens;
            t.prompt = run->promptTokens;
            t.generated = run->generatedTokens;
            return t;
        };
        QVector<Turn> reference;
        {
            QTemporaryDir dir;
            Rig r(dir.filePath("colibri.db"), 16);
            QVERIFY(r.ready());
            QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000); // the identity is known
            for (const QString& q : questions)
                reference.append(turn(r, q));
        }
        QTemporaryDir dir;
        const QString db = dir.filePath("colibri.db");
        QVector<Turn> restarted;
        qint64 id = 0;
        QString kvFile;
        for (int i = 0; i < questions.size(); ++i) {
            Rig r(db, 16);
            QVERIFY(r.ready());
            QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000);
            if (i > 0) { // the chat comes back at start, its KV size with it
                QTRY_COMPARE_WITH_TIMEOUT(r.controller->chatModel()->rowCount(), 2 * i, 10000);
                QCOMPARE(r.sessions->currentSessionId(), id);
                QCOMPARE(r.sessions->sessions()->at(0).kvBytes, QFileInfo(kvFile).size());
                QVERIFY(r.sessions->currentKvText().startsWith("KV cache "));
            }
            restarted.append(turn(r, questions[i]));
            id = r.sessions->currentSessionId();
            QVERIFY(id > 0);
            kvFile = r.sessions->kvDir() + QStringLiteral("/session-%1.kv").arg(id);
            // Saved after the answer (the first one once the chat had its id): the list has it.
            const QModelIndex row = r.sessions->sessions()->index(0);
            const qint64 expected = restarted.last().kvBytes();
            QTRY_COMPARE_WITH_TIMEOUT(
                r.sessions->sessions()->data(row, SessionListModel::KvBytesRole).toLongLong(),
                expected, 10000);
            QCOMPARE(QFileInfo(kvFile).size(), expected);
            QVERIFY(!r.sessions->sessions()
                         ->data(row, SessionListModel::KvSizeRole)
                         .toString()
                         .isEmpty());
            QCOMPARE(r.sessions->currentKvText(),
                     QStringLiteral("KV cache %1 on disk")
                         .arg(SessionListModel::kvSizeText(QFileInfo(kvFile).size())));
            QVERIFY(r.controller->errorText().isEmpty()); // no KV warning
        }
        QCOMPARE(kvDirOf(db), QFileInfo(kvFile).absolutePath()); // beside the database
        for (int i = 0; i < questions.size(); ++i) {
            QVERIFY(reference[i].reused >= 0 && restarted[i].reused >= 0);
            QCOMPARE(restarted[i].answer, reference[i].answer);
            QCOMPARE(restarted[i].prompt, reference[i].prompt);
            QCOMPARE(restarted[i].reused, reference[i].reused);
            if (i > 0) QVERIFY(restarted[i].reused >= reference[i - 1].prompt); // warm
        }
        // A second chat under a cap that holds one file: saving it deletes the first chat's file
        // (its text stays), and the first chat's row says it has none; then deleting the second
        // chat deletes its file.
        Rig r(db, 16);
        QVERIFY(r.ready());
        QTRY_VERIFY_WITH_TIMEOUT(r.sessions->learning(), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(r.controller->chatModel()->rowCount(), 6, 10000);
        r.sessions->setKvCapBytes(quint64(QFileInfo(kvFile).size()));
        r.sessions->newSession();
        QVERIFY(r.ask("Something else entirely"));
        QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(kvFile), 10000);
        QVERIFY(r.settle());
        QCOMPARE(r.sessions->sessions()->rowCount(), 2);
        QCOMPARE(r.sessions->sessions()->at(1).id, id);
        QTRY_COMPARE_WITH_TIMEOUT(r.sessions->sessions()->at(1).kvBytes, qint64(0), 10000);
        const qint64 second = r.sessions->sessions()->at(0).id;
        const QString secondFile =
            r.sessions->kvDir() + QStringLiteral("/session-%1.kv").arg(second);
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(secondFile).size() > 4096, 10000);
        r.sessions->deleteSession(second);
        QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(secondFile), 10000);
        QVERIFY(r.sessions->currentKvText().isEmpty());
        // The first chat, without its file, is read again at its next answer: same text.
        r.sessions->openSession(id);
        QSignalSpy opened(r.sessions.get(), &SessionManager::sessionOpened);
        QVERIFY(opened.wait(10000));
        const Turn cold = turn(r, "And the slowest?");
        QCOMPARE(cold.reused, qint64(0));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(kvFile).size() > 4096, 10000); // saved again
    }
};

QTEST_GUILESS_MAIN(TestSessionManager)
#include "tst_session_manager.moc"
