#pragma once
// The session list of the sidebar: one row per saved chat, most recently updated first; while a
// search runs, only the matching sessions, best first, each with a snippet of the match.
// Roles: sessionId (the database id, or a provisional key < 0 until the storage thread has
// created the row), title, updated (QDateTime), messageCount, modelPath, snippet (search only;
// the match between « and »), kvBytes (the chat's KV cache file on disk, 0: none) and kvSize
// (the same in words, "1.2 MiB"; "" when the file holds no token).
// Thread-safety: GUI thread only; changed in batches (threading contract rule 5).
#include "storage/session_types.h"

#include <QAbstractListModel>
#include <QDateTime>
#include <QString>
#include <QVector>

#include <vector>

namespace coli::app {

class SessionListModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Role {
        SessionIdRole = Qt::UserRole + 1,
        TitleRole,
        UpdatedRole,
        MessageCountRole,
        ModelPathRole,
        SnippetRole,
        KvBytesRole,
        KvSizeRole,
    };
    struct Row {
        qint64 id = 0;
        QString title;
        QDateTime updated;
        int messageCount = 0;
        QString modelPath;
        QString modelIdentity;
        QString snippet;
        qint64 kvBytes = 0;
    };

    explicit SessionListModel(QObject* parent = nullptr);
    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    static Row fromInfo(const storage::SessionInfo& s);
    // Replaces every row (a listing or search results): one reset.
    void setRows(QVector<Row> rows);
    // Inserts at the top or moves an existing row (same id) to the top with new values.
    void upsertTop(const Row& row);
    void rename(qint64 id, const QString& title);
    void remove(qint64 id);
    // The chat's KV file holds `bytes` now (a turn saved, the cap deleted it, ...).
    void setKvBytes(qint64 id, qint64 bytes);
    // "1.2 MiB" (the locale's digits, IEC units as everywhere in the app); "" for a file that holds
    // no token (its header alone) or none.
    static QString kvSizeText(qint64 bytes);
    // A provisional key became a database id.
    void rekey(qint64 from, qint64 to);
    int indexOf(qint64 id) const;
    const Row& at(int row) const { return m_rows[row]; }

signals:
    void countChanged();

private:
    QVector<Row> m_rows;
};

} // namespace coli::app
