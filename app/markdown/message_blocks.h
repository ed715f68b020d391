#pragma once
// The blocks of one answer, for QML (one delegate per block): a list model over a BlockStream
// (markdown_blocks.h). ChatModel owns one per assistant message and feeds it the streamed text;
// while the answer streams, only the open (last) rows change, final rows never do.
//
// Roles: kind ("prose", "code" or "think"), text (prose: plain text; code: the code; think: the
// reasoning), html (prose: safe rich text, see markdown_blocks.h), language (code), open (true
// while the block may still change: the answer streams and the block is not final; a think block
// is open until its </think> arrives), thinkSeconds (think: seconds from its first piece to its
// </think>; -1 when unknown, e.g. a message that was not streamed or is still thinking).
// Thread-safety: GUI thread only (QObject affinity).
#include "markdown/markdown_blocks.h"

#include <QAbstractListModel>
#include <QElapsedTimer>
#include <QString>

namespace coli::app {

class MessageBlocks : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
    Q_PROPERTY(bool streaming READ streaming NOTIFY streamingChanged)
public:
    enum Role {
        KindRole = Qt::UserRole + 1,
        TextRole,
        HtmlRole,
        LanguageRole,
        OpenRole,
        ThinkSecondsRole,
    };
    Q_ENUM(Role)

    explicit MessageBlocks(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // Streaming: append pieces between setStreaming(true) and setStreaming(false).
    void append(const QString& piece);
    void setStreaming(bool streaming);
    bool streaming() const { return m_streaming; }
    // A whole message at once (not streamed): replaces every row.
    void setText(const QString& text);

    // Rows that will not change any more: all of them once the answer stopped streaming.
    int finalCount() const { return m_streaming ? int(m_stream.finalCount()) : rowCount(); }
    const markdown::BlockStream& stream() const { return m_stream; }

    // The block's text (the code of a code block) to the system clipboard.
    Q_INVOKABLE void copyToClipboard(int row) const;

signals:
    void countChanged();
    void streamingChanged();

private:
    void sync(size_t firstChanged);
    bool isOpen(int row) const;

    markdown::BlockStream m_stream;
    std::vector<markdown::Block> m_rows; // what the view was last told
    int m_openFrom = 0;                  // rows from here were reported open
    bool m_streaming = false;
    QElapsedTimer m_thinkTimer;
    double m_thinkSeconds = -1;
    bool m_thinkSecondsChanged = false; // not yet reported to the view
};

} // namespace coli::app
