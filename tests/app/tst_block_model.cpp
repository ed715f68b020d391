// MessageBlocks (app/markdown/message_blocks.h), the per-answer block list model, under
// QAbstractItemModelTester while the recorded 2,000-token Markdown answer streams into it piece
// by piece: rows before finalCount() never change (no dataChanged, removal or new value), the end
// equals the whole text's parse, and the think block closes and reports its duration.
#include "chat_model.h"
#include "markdown/message_blocks.h"
#include "token_replay.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using namespace coli;
using namespace coli::app;

namespace {
const QString kRecording = QStringLiteral(COLI_SOURCE_DIR "/tests/app/data/markdown_answer.replay");

struct Row {
    QString kind, text, html, language;
    bool operator==(const Row&) const = default;
};

Row rowAt(const MessageBlocks& m, int r) {
    const QModelIndex i = m.index(r);
    return {m.data(i, MessageBlocks::KindRole).toString(),
            m.data(i, MessageBlocks::TextRole).toString(),
            m.data(i, MessageBlocks::HtmlRole).toString(),
            m.data(i, MessageBlocks::LanguageRole).toString()};
}
} // namespace

class TstBlockModel : public QObject {
    Q_OBJECT
private slots:
    void roleNames();
    void streamedAnswerKeepsFinalRows();
    void wholeMessageAtOnce();
    void chatModelOwnsBlocksOfAnswers();
};

void TstBlockModel::roleNames() {
    MessageBlocks m;
    const auto names = m.roleNames();
    QCOMPARE(names.value(MessageBlocks::KindRole), QByteArray("kind"));
    QCOMPARE(names.value(MessageBlocks::TextRole), QByteArray("text"));
    QCOMPARE(names.value(MessageBlocks::HtmlRole), QByteArray("html"));
    QCOMPARE(names.value(MessageBlocks::LanguageRole), QByteArray("language"));
    QCOMPARE(names.value(MessageBlocks::OpenRole), QByteArray("open"));
    QCOMPARE(names.value(MessageBlocks::ThinkSecondsRole), QByteArray("thinkSeconds"));
    QCOMPARE(QSet<QByteArray>(names.begin(), names.end()).size(), names.size());
}

void TstBlockModel::streamedAnswerKeepsFinalRows() {
    auto rec = readTokenReplay(kRecording.toStdString());
    QVERIFY2(rec.isOk(), rec.status().message().c_str());
    QVERIFY(rec.value().size() >= 2000);

    MessageBlocks m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    int finalBefore = 0; // rows final before the current append
    QStringList violations;
    connect(&m, &QAbstractItemModel::dataChanged, this,
            [&](const QModelIndex& tl, const QModelIndex&, const QList<int>& roles) {
                Q_UNUSED(roles);
                if (tl.row() < finalBefore)
                    violations << QStringLiteral("dataChanged of final row %1").arg(tl.row());
            });
    connect(&m, &QAbstractItemModel::rowsAboutToBeRemoved, this,
            [&](const QModelIndex&, int first, int) {
                if (first < finalBefore)
                    violations << QStringLiteral("removal of final row %1").arg(first);
            });
    QSignalSpy inserted(&m, &QAbstractItemModel::rowsInserted);
    m.setStreaming(true);
    std::vector<Row> finals;
    bool sawThinkOpen = false;
    QString all;
    for (const ReplayPiece& p : rec.value()) {
        const QString piece = QString::fromStdString(p.text);
        all += piece;
        finalBefore = m.finalCount();
        m.append(piece);
        QVERIFY(m.finalCount() >= finalBefore);
        for (int r = 0; r < int(finals.size()); ++r)
            QVERIFY2(rowAt(m, r) == finals[size_t(r)],
                     qPrintable(QStringLiteral("final row %1 changed").arg(r)));
        for (int r = int(finals.size()); r < m.finalCount(); ++r)
            finals.push_back(rowAt(m, r));
        // Open rows are exactly those from finalCount() on.
        for (int r = 0; r < m.rowCount(); ++r)
            QCOMPARE(m.data(m.index(r), MessageBlocks::OpenRole).toBool(), r >= m.finalCount());
        if (m.rowCount() > 0 && rowAt(m, 0).kind == "think" && m.finalCount() == 0)
            sawThinkOpen = true;
        QVERIFY2(violations.isEmpty(), qPrintable(violations.join('\n')));
    }
    QVERIFY(sawThinkOpen); // the think block streamed open, then closed
    QVERIFY(m.finalCount() >= 25);
    QCOMPARE(m.finalCount(), m.rowCount() - 1); // only the last block is open
    // Re-parsing stayed on the open part: far less than re-parsing the answer per piece.
    const size_t quadratic = size_t(all.size()) * size_t(rec.value().size()) / 2;
    QVERIFY2(m.stream().parsedBytes() < quadratic / 5,
             qPrintable(QString::number(m.stream().parsedBytes())));

    m.setStreaming(false);
    QCOMPARE(m.finalCount(), m.rowCount());
    for (int r = 0; r < m.rowCount(); ++r)
        QCOMPARE(m.data(m.index(r), MessageBlocks::OpenRole).toBool(), false);

    // The end equals a parse of the whole answer: one think block, then the Markdown blocks.
    const std::string text = all.toStdString();
    const std::vector<markdown::Block> expected =
        markdown::parseBlocks(std::string_view(text).substr(text.find("</think>") + 8));
    QCOMPARE(m.rowCount(), int(expected.size()) + 1);
    QCOMPARE(rowAt(m, 0).kind, QStringLiteral("think"));
    QVERIFY(rowAt(m, 0).text.startsWith("The user wants"));
    QVERIFY(m.data(m.index(0), MessageBlocks::ThinkSecondsRole).toDouble() >= 0);
    int code = 0;
    for (int r = 1; r < m.rowCount(); ++r) {
        const auto& e = expected[size_t(r - 1)];
        QCOMPARE(rowAt(m, r).text, QString::fromStdString(e.text));
        QCOMPARE(rowAt(m, r).html, QString::fromStdString(e.html));
        if (rowAt(m, r).kind == "code") ++code;
    }
    // Seven fenced blocks, with their languages.
    QCOMPARE(code, 7);
    QStringList languages;
    for (int r = 0; r < m.rowCount(); ++r)
        if (rowAt(m, r).kind == "code") languages << rowAt(m, r).language;
    QCOMPARE(languages, (QStringList{"csv", "python", "bash", "text", "python", "cpp", "sh"}));
    QVERIFY(inserted.count() >= m.rowCount()); // rows arrived as the stream went
}

void TstBlockModel::wholeMessageAtOnce() {
    MessageBlocks m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy reset(&m, &QAbstractItemModel::modelReset);
    m.setText(QStringLiteral("<think>hm</think>Text\n```js\nx()\n```\n"));
    QCOMPARE(reset.count(), 1);
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(rowAt(m, 0).kind, QStringLiteral("think"));
    QCOMPARE(m.data(m.index(0), MessageBlocks::ThinkSecondsRole).toDouble(), -1.0); // unknown
    QCOMPARE(rowAt(m, 1).html, QStringLiteral("<p>Text</p>"));
    QCOMPARE(rowAt(m, 2).kind, QStringLiteral("code"));
    QCOMPARE(rowAt(m, 2).language, QStringLiteral("js"));
    QCOMPARE(rowAt(m, 2).text, QStringLiteral("x()"));
    QCOMPARE(m.data(m.index(2), MessageBlocks::OpenRole).toBool(), false);
    m.setText({});
    QCOMPARE(m.rowCount(), 0);
}

void TstBlockModel::chatModelOwnsBlocksOfAnswers() {
    ChatModel chat;
    QAbstractItemModelTester tester(&chat, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(chat.roleNames().value(ChatModel::BlocksRole), QByteArray("blocks"));
    chat.appendMessage("user", "Hi *there*");
    QVERIFY(chat.data(chat.index(0), ChatModel::BlocksRole).value<QObject*>() == nullptr);
    const int row = chat.beginAssistant();
    auto* blocks = qobject_cast<MessageBlocks*>(
        chat.data(chat.index(row), ChatModel::BlocksRole).value<QObject*>());
    QVERIFY(blocks);
    QVERIFY(blocks->streaming());
    chat.appendText(row, "# Title\n\npara\n");
    QCOMPARE(blocks->rowCount(), 2);
    QCOMPARE(blocks->finalCount(), 1);
    chat.finish(row, 3, 10, 0.1, "eos");
    QVERIFY(!blocks->streaming());
    QCOMPARE(blocks->finalCount(), 2);
    QPointer<MessageBlocks> guard(blocks);
    chat.clear();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QVERIFY(guard.isNull()); // deleted with its row

    // A saved conversation shown again (SessionManager): answers get their blocks, parsed whole;
    // rows handed in are values (a blocks pointer in them is not taken over).
    ChatModel other;
    other.appendMessage("assistant", "x");
    ChatModel::Message q, a;
    q.role = "user";
    q.text = "Code?";
    a.role = "assistant";
    a.text = "Here:\n```py\nprint(1)\n```\n";
    a.blocks = other.at(0).blocks; // must not be shared or deleted by `chat`
    chat.replaceAll({q, a, q, a});
    QCOMPARE(chat.rowCount(), 4);
    QVERIFY(chat.at(0).blocks == nullptr);
    for (int r : {1, 3}) {
        MessageBlocks* b = chat.at(r).blocks;
        QVERIFY(b);
        QVERIFY(b != other.at(0).blocks);
        QCOMPARE(b->rowCount(), 2);
        QCOMPARE(b->data(b->index(1), MessageBlocks::LanguageRole).toString(),
                 QStringLiteral("py"));
        QVERIFY(!b->streaming());
    }
    QPointer<MessageBlocks> first(chat.at(1).blocks), last(chat.at(3).blocks);
    chat.truncate(2); // edit and resend / regenerate: the rows after go, with their blocks
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QVERIFY(!first.isNull());
    QVERIFY(last.isNull());
    chat.replaceAll({q});
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QVERIFY(first.isNull());
    QVERIFY(other.at(0).blocks->rowCount() == 1); // untouched
}

QTEST_GUILESS_MAIN(TstBlockModel)
#include "tst_block_model.moc"
