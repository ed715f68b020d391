// colibri_session_probe: the app's engine thread and sessions glue without a window, for the kill
// test (tests/app/test_kill_sessions.py). It builds the same EngineController and SessionManager
// (with its StorageWorker) as the app, loads a model and sends a fixed list of prompts one after
// another until it is killed; every committed write of a message's text is acknowledged on
// --ack-fd ("ack <message id> <sha256 hex>\n", written by StorageWorker itself). A new chat is
// started after every --per-session answers, so sessions, messages, runs, learned usage and each
// chat's KV file (<database stem>.kv/ beside it) all keep being written. The first chat after a
// start is the one the app restores (the last shown). Prints nothing but errors (stderr); exits
// only on one (1: usage, 3: the model did not load, 4: an answer failed, 5: the database could not
// be used).
// --stop-after N: N answers, then idle until killed.
// --continue PROMPT (test_kill_session_kv.py): instead, waits until the model is ready, its
// identity known and the chat shown last has come back, sends PROMPT once (seed --seed), prints
// one JSON line {session, rows (messages restored), kvBytesAtOpen (the chat's KV file when the
// engine opened it, -1: no report), reused, prompt, generated, answer, notice} and exits 0 after
// an orderly shutdown (6: no chat came back within 60 s).
#include "engine_controller.h"
#include "session_manager.h"
#include "startup/omp_defaults.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

using namespace coli;
using namespace coli::app;

namespace {
// Prompts that invite long answers; with ignoreEos every answer runs to --max-tokens anyway.
const QStringList kPrompts = {
    QStringLiteral("Tell me a long story about a lighthouse keeper and the sea."),
    QStringLiteral("Describe, step by step, how bread is made from wheat."),
    QStringLiteral("Explain why the sky is blue, then why sunsets are red."),
    QStringLiteral("Write a letter to a friend about a journey by train through the mountains."),
    QStringLiteral("List the planets and say one thing about each of them."),
};

[[noreturn]] void fail(int code, const QString& what) {
    std::fprintf(stderr, "colibri_session_probe: %s\n", qPrintable(what));
    std::fflush(stderr);
    std::_Exit(code); // no orderly shutdown: an error is all the test needs to see
}

// A non-negative integer option, or a usage error naming the flag.
qint64 number(const QCommandLineParser& p, const QString& name, qint64 min, qint64 max) {
    bool ok = false;
    const qint64 v = p.value(name).toLongLong(&ok);
    if (!ok || v < min || v > max)
        fail(1, QStringLiteral("--%1 must be an integer in [%2, %3], not '%4'")
                    .arg(name)
                    .arg(min)
                    .arg(max)
                    .arg(p.value(name)));
    return v;
}
} // namespace

int main(int argc, char* argv[]) {
    startup::applyOmpDefaults(argv, startup::OmpWaitMode::Passive); // before OpenMP starts
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Sends prompts forever through the app's engine and session classes (kill test)."));
    parser.addHelpOption();
    parser.addOptions({
        {QStringLiteral("model"), QStringLiteral("Model folder."), QStringLiteral("DIR")},
        {QStringLiteral("db"), QStringLiteral("Database file."), QStringLiteral("FILE")},
        {QStringLiteral("ack-fd"), QStringLiteral("Descriptor for acknowledgements (-1: none)."),
         QStringLiteral("N"), QStringLiteral("-1")},
        {QStringLiteral("max-tokens"), QStringLiteral("Tokens per answer (EOS ignored)."),
         QStringLiteral("N"), QStringLiteral("200")},
        {QStringLiteral("seed"), QStringLiteral("Seed of the first answer (then +1 each)."),
         QStringLiteral("S"), QStringLiteral("1")},
        {QStringLiteral("save-interval-ms"),
         QStringLiteral("Interval of the streaming saves (the app: 2000)."), QStringLiteral("MS"),
         QStringLiteral("2000")},
        {QStringLiteral("per-session"), QStringLiteral("Answers per chat before a new one."),
         QStringLiteral("N"), QStringLiteral("2")},
        {QStringLiteral("threads"), QStringLiteral("Forward-pass threads."), QStringLiteral("N"),
         QStringLiteral("1")},
        {QStringLiteral("stop-after"),
         QStringLiteral("Answers to send, then stay idle until killed (0: no end)."),
         QStringLiteral("N"), QStringLiteral("0")},
        {QStringLiteral("continue"),
         QStringLiteral("Continue the chat shown last with PROMPT once, print the turn (JSON)."),
         QStringLiteral("PROMPT")},
    });
    parser.process(app);
    if (parser.value("model").isEmpty() || parser.value("db").isEmpty())
        fail(1, QStringLiteral("--model and --db are required"));
    const int ackFd = int(number(parser, "ack-fd", -1, 1 << 20));
    const int maxTokens = int(number(parser, "max-tokens", 1, 1 << 20));
    const qint64 seed0 = number(parser, "seed", 0, std::numeric_limits<qint64>::max() / 2);
    const int saveMs = int(number(parser, "save-interval-ms", 1, 3600 * 1000));
    const int perSession = int(number(parser, "per-session", 1, 1 << 20));
    const int threads = int(number(parser, "threads", 1, 1024));
    const qint64 stopAfter = number(parser, "stop-after", 0, std::numeric_limits<qint64>::max());

    EngineController controller(WorkerOptions{.threads = threads});
    GenerateParams params;
    params.maxNewTokens = maxTokens;
    params.ignoreEos = true;
    SamplingOverrides sampling;
    sampling.temperature = 0.8f;
    controller.setGenerateParams(params, sampling);

    StorageWorkerOptions so;
    so.path = parser.value("db").toStdString();
    so.ackFd = ackFd;
    SessionManager sessions(&controller, so);
    sessions.setStreamSaveInterval(saveMs);
    QObject::connect(&sessions, &SessionManager::storageProblemChanged, &app, [&] {
        if (!sessions.storageProblem().isEmpty()) fail(5, sessions.storageProblem());
    });

    if (parser.isSet("continue")) {
        // One turn of the chat that comes back at start, once everything it needs is there.
        const QString prompt = parser.value("continue");
        bool opened = false, sent = false;
        int rows = 0;
        qint64 kvAtOpen = -1;
        std::optional<storage::RunRecord> run;
        auto start = [&] {
            if (sent || !opened || controller.loadState() != QLatin1String("ready") ||
                !sessions.learning())
                return;
            sent = true;
            rows = controller.chatModel()->rowCount();
            sampling.seed = quint64(seed0);
            controller.setGenerateParams(params, sampling);
            if (!controller.send(prompt))
                fail(4, QStringLiteral("the prompt was refused (%1)").arg(controller.errorText()));
        };
        QObject::connect(&controller, &EngineController::loadStateChanged, &app, [&] {
            if (controller.loadState() == QLatin1String("error")) fail(3, controller.errorText());
            start();
        });
        QObject::connect(&sessions, &SessionManager::learningChanged, &app, start);
        QObject::connect(&sessions, &SessionManager::sessionOpened, &app, [&] {
            opened = true;
            start();
        });
        QObject::connect(&controller, &EngineController::sessionKvChanged, &app,
                         [&](qint64 session, qint64 bytes) {
                             if (sent && kvAtOpen < 0 && session == sessions.currentSessionId())
                                 kvAtOpen = bytes;
                         });
        QObject::connect(&sessions, &SessionManager::runAdded, &app,
                         [&](const storage::RunRecord& r) { run = r; });
        QObject::connect(&controller, &EngineController::answerFinished, &app, [&](int row) {
            const ChatModel::Message& m = controller.chatModel()->at(row);
            if (!m.error.isEmpty()) fail(4, QStringLiteral("an answer failed: %1").arg(m.error));
            if (!run) fail(4, QStringLiteral("the answer has no run"));
            const QJsonObject out{{"session", sessions.currentSessionId()},
                                  {"rows", rows},
                                  {"kvBytesAtOpen", kvAtOpen},
                                  {"reused", qint64(run->reusedTokens)},
                                  {"prompt", qint64(run->promptTokens)},
                                  {"generated", qint64(run->generatedTokens)},
                                  {"answer", m.text},
                                  {"notice", controller.errorText()}};
            std::printf("%s\n", QJsonDocument(out).toJson(QJsonDocument::Compact).constData());
            std::fflush(stdout);
            QTimer::singleShot(0, &app, &QCoreApplication::quit);
        });
        QTimer::singleShot(60000, &app, [&] {
            if (!sent) fail(6, QStringLiteral("no chat came back within 60 s"));
        });
        controller.loadModel(parser.value("model"));
        const int code = app.exec();
        controller.shutdown(); // as main() at aboutToQuit: the KV file is saved first
        sessions.shutdown();
        return code;
    }

    qint64 answers = 0;
    // The next prompt, once the model is ready and no answer runs (also after a turn that ended
    // without answerFinished, e.g. a conversation replaced under it).
    auto next = [&] {
        if (controller.loadState() != QLatin1String("ready") || controller.generating()) return;
        if (stopAfter > 0 && answers >= stopAfter) return; // idle until killed
        if (answers > 0 && answers % perSession == 0 && controller.chatModel()->rowCount() > 0)
            sessions.newSession();
        sampling.seed = quint64(seed0 + answers);
        controller.setGenerateParams(params, sampling);
        if (!controller.send(kPrompts[int(answers % kPrompts.size())]))
            fail(4, QStringLiteral("the prompt was refused (%1)").arg(controller.errorText()));
        ++answers;
    };
    auto later = [&] { QTimer::singleShot(0, &app, next); };
    QObject::connect(&controller, &EngineController::loadStateChanged, &app, [&] {
        if (controller.loadState() == QLatin1String("error")) fail(3, controller.errorText());
        later();
    });
    QObject::connect(&controller, &EngineController::generatingChanged, &app, later);
    QObject::connect(&controller, &EngineController::answerFinished, &app, [&](int row) {
        const ChatModel::Message& m = controller.chatModel()->at(row);
        if (!m.error.isEmpty()) fail(4, QStringLiteral("an answer failed: %1").arg(m.error));
    });

    controller.loadModel(parser.value("model"));
    return app.exec(); // until killed
}
