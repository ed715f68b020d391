// ChatModel: the conversation list model, checked by QAbstractItemModelTester through appends,
// streaming updates, errors and resets, plus role names, batching and the engine conversation.
#include "chat_model.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using coli::app::ChatModel;

class TstChatModel : public QObject {
    Q_OBJECT
private slots:
    void roleNames();
    void appendsAndStreaming();
    void batchedAppendIsOneDataChanged();
    void errorsAndConversation();
    void resetClears();
};

void TstChatModel::roleNames() {
    ChatModel m;
    const auto names = m.roleNames();
    QCOMPARE(names.value(ChatModel::RoleRole), QByteArray("role"));
    QCOMPARE(names.value(ChatModel::TextRole), QByteArray("text"));
    QCOMPARE(names.value(ChatModel::TokensPerSecondRole), QByteArray("tokensPerSecond"));
    QCOMPARE(names.value(ChatModel::TtftRole), QByteArray("ttft"));
    QCOMPARE(names.value(ChatModel::StreamingRole), QByteArray("streaming"));
    QCOMPARE(names.value(ChatModel::ErrorRole), QByteArray("error"));
    QCOMPARE(names.value(ChatModel::TokensRole), QByteArray("tokens"));
    QCOMPARE(names.value(ChatModel::StopReasonRole), QByteArray("stopReason"));
    // Distinct names, so QML delegates can bind each.
    QCOMPARE(QSet<QByteArray>(names.begin(), names.end()).size(), names.size());
}

void TstChatModel::appendsAndStreaming() {
    ChatModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&m, &QAbstractItemModel::rowsInserted);
    QCOMPARE(m.appendMessage("user", "Hello"), 0);
    const int row = m.beginAssistant();
    QCOMPARE(row, 1);
    QCOMPARE(inserted.count(), 2);
    QCOMPARE(m.rowCount(), 2);
    const QModelIndex i = m.index(row);
    QCOMPARE(m.data(i, ChatModel::RoleRole).toString(), QString("assistant"));
    QCOMPARE(m.data(i, ChatModel::StreamingRole).toBool(), true);
    QCOMPARE(m.data(i, ChatModel::TextRole).toString(), QString());

    m.appendText(row, "Hi");
    m.appendText(row, " there ✓");
    QCOMPARE(m.data(i, ChatModel::TextRole).toString(), QString("Hi there ✓"));
    m.setLiveRate(row, 12.5);
    QCOMPARE(m.data(i, ChatModel::TokensPerSecondRole).toDouble(), 12.5);

    m.finish(row, 7, 20.0, 0.25, "eos");
    QCOMPARE(m.data(i, ChatModel::StopReasonRole).toString(), QString("eos"));
    QCOMPARE(m.data(i, ChatModel::StreamingRole).toBool(), false);
    QCOMPARE(m.data(i, ChatModel::TokensRole).toInt(), 7);
    QCOMPARE(m.data(i, ChatModel::TokensPerSecondRole).toDouble(), 20.0);
    QCOMPARE(m.data(i, ChatModel::TtftRole).toDouble(), 0.25);
    QCOMPARE(m.data(m.index(0), ChatModel::TextRole).toString(), QString("Hello"));
    QCOMPARE(m.data(m.index(0), Qt::DisplayRole).toString(), QString("Hello"));
    // Out of range rows are ignored, never a crash.
    m.appendText(5, "x");
    m.finish(-1, 0, 0, 0);
    QVERIFY(!m.data(m.index(9), ChatModel::TextRole).isValid());
}

void TstChatModel::batchedAppendIsOneDataChanged() {
    ChatModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.appendMessage("user", "q");
    const int row = m.beginAssistant();
    QSignalSpy changed(&m, &QAbstractItemModel::dataChanged);
    // What EngineController does per drain: the pieces concatenated, one appendText call.
    QString batch;
    for (const char* piece : {"a", "b", "c", "d"})
        batch += piece;
    m.appendText(row, batch);
    QCOMPARE(changed.count(), 1);
    const auto args = changed.first();
    QCOMPARE(args.at(0).toModelIndex().row(), row);
    QCOMPARE(args.at(1).toModelIndex().row(), row);
    QCOMPARE(args.at(2).value<QList<int>>(), QList<int>{ChatModel::TextRole});
    // Empty batches emit nothing; an unchanged rate emits nothing.
    m.appendText(row, QString());
    m.setLiveRate(row, 0.0);
    QCOMPARE(changed.count(), 1);
}

void TstChatModel::errorsAndConversation() {
    ChatModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.appendMessage("system", "Be brief.");
    m.appendMessage("user", "one");
    int r = m.beginAssistant();
    m.appendText(r, "answer one");
    m.finish(r, 3, 1, 1);
    m.appendMessage("user", "two");
    r = m.beginAssistant();
    m.appendText(r, "partial");
    m.fail(r, "Numeric: NaN logits");
    QCOMPARE(m.data(m.index(r), ChatModel::ErrorRole).toString(), QString("Numeric: NaN logits"));
    QCOMPARE(m.data(m.index(r), ChatModel::StreamingRole).toBool(), false);
    m.appendMessage("user", "three");

    // The failed answer and its question are left out, so roles keep alternating.
    const auto conv = m.conversation();
    QCOMPARE(int(conv.size()), 4);
    QCOMPARE(QString::fromStdString(conv[0].role), QString("system"));
    QCOMPARE(QString::fromStdString(conv[1].content), QString("one"));
    QCOMPARE(QString::fromStdString(conv[2].role), QString("assistant"));
    QCOMPARE(QString::fromStdString(conv[2].content), QString("answer one"));
    QCOMPARE(QString::fromStdString(conv[3].content), QString("three"));
    // UTF-8 survives the round trip through QString.
    ChatModel u;
    u.appendMessage("user", QString::fromUtf8("héllo 世界 🙂"));
    QCOMPARE(u.conversation()[0].content, std::string("héllo 世界 🙂"));
}

void TstChatModel::resetClears() {
    ChatModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy reset(&m, &QAbstractItemModel::modelReset);
    QSignalSpy count(&m, &ChatModel::countChanged);
    m.clear(); // empty: nothing to do
    QCOMPARE(reset.count(), 0);
    m.appendMessage("user", "x");
    m.beginAssistant();
    m.clear();
    QCOMPARE(reset.count(), 1);
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(count.count(), 3);
    QVERIFY(m.conversation().empty());
    m.appendMessage("user", "again");
    QCOMPARE(m.rowCount(), 1);
}

QTEST_GUILESS_MAIN(TstChatModel)
#include "tst_chat_model.moc"
