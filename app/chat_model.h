#pragma once
// The conversation shown in the chat view: one row per message (threading contract rule 5: it
// changes only on the GUI thread, and streamed text is appended once per ring drain).
// Roles: role ("user"/"assistant"/"system"), text, tokensPerSecond, ttft (seconds), tokens
// (generated tokens of an answer), streaming (bool), error (string, empty when none), stopReason
// (why an answer ended, as stopReasonName() spells it; empty while streaming), blocks (assistant
// messages: the MessageBlocks list model of its Markdown blocks, owned by this model and deleted
// with its row; null for other roles).
// Thread-safety: GUI thread only (QObject affinity).
#include <QAbstractListModel>
#include <QString>
#include <QVector>

#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "markdown/message_blocks.h"

namespace coli::app {

class ChatModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Role {
        RoleRole = Qt::UserRole + 1,
        TextRole,
        TokensPerSecondRole,
        TtftRole,
        TokensRole,
        StreamingRole,
        ErrorRole,
        StopReasonRole,
        HitRateRole,     // the answer's expert hit rate (RAM), 0..1; -1: not measured
        MibPerTokenRole, // MiB of experts read per decode step of the answer; -1: not measured
        PrefillMibPerTokenRole, // MiB read per token of the prompt's prefill; -1: none
        CanContinueRole,        // an answer that stopped at the token limit or by Stop
        BlocksRole,
    };
    Q_ENUM(Role)

    struct Message {
        QString role;
        QString text;
        double tokensPerSecond = 0;
        double ttft = 0;
        int tokens = 0;
        bool streaming = false;
        QString error;
        QString stopReason; // why an answer ended: "eos", "max tokens", "cancelled", ...
        double hitRate = -1;
        double mibPerToken = -1;
        double prefillMibPerToken = -1;
        MessageBlocks* blocks = nullptr; // assistant messages; owned by the ChatModel
    };

    explicit ChatModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    const Message& at(int row) const { return m_rows[row]; }
    // Appends a finished message; returns its row.
    int appendMessage(const QString& role, const QString& text);
    // Appends an empty assistant message with streaming = true; returns its row.
    int beginAssistant();
    // Appends text to a row (one dataChanged for the whole batch; the row's blocks re-parse only
    // their open part).
    void appendText(int row, const QString& piece);
    // Live tok/s while streaming (from the telemetry snapshot).
    void setLiveRate(int row, double tokensPerSecond);
    // Ends streaming with the final statistics.
    void finish(int row, int tokens, double tokensPerSecond, double ttftSeconds,
                const QString& stopReason = {});
    // Ends streaming with an error (the text streamed so far stays).
    void fail(int row, const QString& error);
    void clear();
    // The answer's tier figures (under the statistics line).
    // The answer's decode hit rate and MiB read per decode step, and the prompt's MiB read per
    // token (-1: no prompt tokens ran).
    void setTurnStats(int row, double hitRate, double mibPerToken, double prefillMibPerToken = -1);
    // "Continue": the answer at `row` streams again, its text kept (pieces are appended).
    void resume(int row);
    // Shows a saved conversation (a session reopened): one reset.
    // Shows a saved conversation (a session reopened): one reset. The rows are taken as values:
    // each answer gets blocks of its own (a `blocks` pointer in `rows` is ignored).
    void replaceAll(const QVector<Message>& rows);
    // Removes rows >= `row` (edit and resend, regenerate); one remove. Their blocks go with them.
    void truncate(int row);

    // The conversation for the engine: every message with text; a failed or empty answer is left
    // out together with the question before it.
    // Rows [0, endRow) (-1: every row).
    std::vector<ChatMessage> conversation(int endRow = -1) const;

signals:
    void countChanged();

private:
    void changed(int row, const QList<int>& roles);
    QVector<Message> m_rows;
};

} // namespace coli::app
