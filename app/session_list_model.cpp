#include "session_list_model.h"

#include "runtime/session_kv_file.h"

#include <QLocale>

namespace coli::app {

SessionListModel::SessionListModel(QObject* parent) : QAbstractListModel(parent) {}

int SessionListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

QVariant SessionListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& r = m_rows[index.row()];
    switch (role) {
    case SessionIdRole:
        return r.id;
    case Qt::DisplayRole:
    case TitleRole:
        return r.title;
    case UpdatedRole:
        return r.updated;
    case MessageCountRole:
        return r.messageCount;
    case ModelPathRole:
        return r.modelPath;
    case SnippetRole:
        return r.snippet;
    case KvBytesRole:
        return r.kvBytes;
    case KvSizeRole:
        return kvSizeText(r.kvBytes);
    default:
        return {};
    }
}

QHash<int, QByteArray> SessionListModel::roleNames() const {
    return {{SessionIdRole, "sessionId"}, {TitleRole, "title"},
            {UpdatedRole, "updated"},     {MessageCountRole, "messageCount"},
            {ModelPathRole, "modelPath"}, {SnippetRole, "snippet"},
            {KvBytesRole, "kvBytes"},     {KvSizeRole, "kvSize"}};
}

SessionListModel::Row SessionListModel::fromInfo(const storage::SessionInfo& s) {
    Row r;
    r.id = s.id;
    r.title = QString::fromStdString(s.title);
    r.updated = QDateTime::fromMSecsSinceEpoch(s.updatedMs);
    r.messageCount = int(s.messageCount);
    r.modelPath = QString::fromStdString(s.modelPath);
    r.modelIdentity = QString::fromStdString(s.modelIdentity);
    return r;
}

void SessionListModel::setRows(QVector<Row> rows) {
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
    emit countChanged();
}

int SessionListModel::indexOf(qint64 id) const {
    for (int i = 0; i < m_rows.size(); ++i)
        if (m_rows[i].id == id) return i;
    return -1;
}

void SessionListModel::upsertTop(const Row& row) {
    const int at = indexOf(row.id);
    if (at == 0) {
        m_rows[0] = row;
        emit dataChanged(index(0), index(0));
        return;
    }
    if (at > 0) {
        beginMoveRows({}, at, at, {}, 0);
        m_rows.move(at, 0);
        endMoveRows();
        m_rows[0] = row;
        emit dataChanged(index(0), index(0));
        return;
    }
    beginInsertRows({}, 0, 0);
    m_rows.prepend(row);
    endInsertRows();
    emit countChanged();
}

void SessionListModel::rename(qint64 id, const QString& title) {
    const int at = indexOf(id);
    if (at < 0 || m_rows[at].title == title) return;
    m_rows[at].title = title;
    emit dataChanged(index(at), index(at), {TitleRole});
}

void SessionListModel::remove(qint64 id) {
    const int at = indexOf(id);
    if (at < 0) return;
    beginRemoveRows({}, at, at);
    m_rows.remove(at);
    endRemoveRows();
    emit countChanged();
}

void SessionListModel::setKvBytes(qint64 id, qint64 bytes) {
    const int at = indexOf(id);
    if (at < 0 || m_rows[at].kvBytes == bytes) return;
    m_rows[at].kvBytes = bytes;
    emit dataChanged(index(at), index(at), {KvBytesRole, KvSizeRole});
}

QString SessionListModel::kvSizeText(qint64 bytes) {
    if (bytes <= qint64(SessionKvFile::kHeaderBytes)) return {};
    return QLocale::system().formattedDataSize(bytes, 1, QLocale::DataSizeIecFormat);
}

void SessionListModel::rekey(qint64 from, qint64 to) {
    const int at = indexOf(from);
    if (at < 0) return;
    m_rows[at].id = to;
    emit dataChanged(index(at), index(at), {SessionIdRole});
}

} // namespace coli::app
