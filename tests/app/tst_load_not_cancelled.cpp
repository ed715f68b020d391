// A model load is not cancelled by what the sessions glue does to the conversation meanwhile:
// showing a saved conversation (the last session, restored at start while the model loads) or
// starting a new chat. Both used to post a Cancel, which stops the running command whatever it
// is, so the app opened with a saved session said "loading cancelled" (found by the kill test,
// test_kill_sessions.py).
#include "engine_controller.h"

#include <QTest>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

bool settled(EngineController& c) {
    return QTest::qWaitFor([&] { return c.loadState() != QLatin1String("loading"); }, 60000);
}

QVector<ChatModel::Message> savedChat() {
    ChatModel::Message user, answer;
    user.role = QStringLiteral("user");
    user.text = QStringLiteral("What is the sea like?");
    answer.role = QStringLiteral("assistant");
    answer.text = QStringLiteral("Wide and grey.");
    answer.stopReason = QStringLiteral("eos");
    return {user, answer};
}
} // namespace

class TestLoadNotCancelled : public QObject {
    Q_OBJECT
private slots:
    void aSavedChatShownDuringTheLoad() {
        EngineController c(WorkerOptions{.threads = 1});
        c.loadModel(kModel);
        c.showConversation(savedChat()); // the engine thread has not finished the load yet
        QVERIFY(settled(c));
        QCOMPARE(c.loadState(), QString("ready"));
        QCOMPARE(c.errorText(), QString());
        QCOMPARE(c.chatModel()->rowCount(), 2);
    }

    void aNewChatDuringTheLoad() {
        EngineController c(WorkerOptions{.threads = 1});
        c.loadModel(kModel);
        c.newChat();
        QVERIFY(settled(c));
        QCOMPARE(c.loadState(), QString("ready"));
        QCOMPARE(c.errorText(), QString());
    }
};

QTEST_GUILESS_MAIN(TestLoadNotCancelled)
#include "tst_load_not_cancelled.moc"
