#include "chat_model.h"

namespace coli::app {

ChatModel::ChatModel(QObject* parent) : QAbstractListModel(parent) {}

int ChatModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

QVariant ChatModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Message& m = m_rows[index.row()];
    switch (role) {
    case Qt::DisplayRole:
    case TextRole:
        return m.text;
    case RoleRole:
        return m.role;
    case TokensPerSecondRole:
        return m.tokensPerSecond;
    case TtftRole:
        return m.ttft;
    case TokensRole:
        return m.tokens;
    case StopReasonRole:
        return m.stopReason;
    case StreamingRole:
        return m.streaming;
    case ErrorRole:
        return m.error;
    case HitRateRole:
        return m.hitRate;
    case MibPerTokenRole:
        return m.mibPerToken;
    case PrefillMibPerTokenRole:
        return m.prefillMibPerToken;
    case CanContinueRole:
        return m.role == QLatin1String("assistant") && !m.streaming && m.error.isEmpty() &&
               (m.stopReason == QLatin1String("max tokens") ||
                m.stopReason == QLatin1String("cancelled")) &&
               !m.text.isEmpty();
    case BlocksRole:
        return QVariant::fromValue(static_cast<QObject*>(m.blocks));
    default:
        return {};
    }
}

QHash<int, QByteArray> ChatModel::roleNames() const {
    return {{RoleRole, "role"},
            {TextRole, "text"},
            {TokensPerSecondRole, "tokensPerSecond"},
            {TtftRole, "ttft"},
            {TokensRole, "tokens"},
            {StreamingRole, "streaming"},
            {StopReasonRole, "stopReason"},
            {ErrorRole, "error"},
            {HitRateRole, "hitRate"},
            {MibPerTokenRole, "mibPerToken"},
            {PrefillMibPerTokenRole, "prefillMibPerToken"},
            {CanContinueRole, "canContinue"},

            {BlocksRole, "blocks"}};
}

int ChatModel::appendMessage(const QString& role, const QString& text) {
    const int row = int(m_rows.size());
    beginInsertRows({}, row, row);
    Message m;
    m.role = role;
    m.text = text;
    if (role == QLatin1String("assistant")) {
        m.blocks = new MessageBlocks(this);
        m.blocks->setText(text);
    }
    m_rows.push_back(std::move(m));
    endInsertRows();
    emit countChanged();
    return row;
}

int ChatModel::beginAssistant() {
    const int row = appendMessage(QStringLiteral("assistant"), {});
    m_rows[row].streaming = true;
    m_rows[row].blocks->setStreaming(true);
    changed(row, {StreamingRole});
    return row;
}

void ChatModel::appendText(int row, const QString& piece) {
    if (row < 0 || row >= m_rows.size() || piece.isEmpty()) return;
    m_rows[row].text += piece;
    if (m_rows[row].blocks) m_rows[row].blocks->append(piece);
    changed(row, {TextRole});
}

void ChatModel::setLiveRate(int row, double tokensPerSecond) {
    if (row < 0 || row >= m_rows.size() || m_rows[row].tokensPerSecond == tokensPerSecond) return;
    m_rows[row].tokensPerSecond = tokensPerSecond;
    changed(row, {TokensPerSecondRole});
}

void ChatModel::finish(int row, int tokens, double tokensPerSecond, double ttftSeconds,
                       const QString& stopReason) {
    if (row < 0 || row >= m_rows.size()) return;
    Message& m = m_rows[row];
    m.tokens = tokens;
    m.tokensPerSecond = tokensPerSecond;
    m.ttft = ttftSeconds;
    m.streaming = false;
    m.stopReason = stopReason;
    if (m.blocks) m.blocks->setStreaming(false);
    changed(row, {TokensRole, TokensPerSecondRole, TtftRole, StreamingRole, StopReasonRole,
                  CanContinueRole});
}

void ChatModel::fail(int row, const QString& error) {
    if (row < 0 || row >= m_rows.size()) return;
    m_rows[row].streaming = false;
    m_rows[row].error = error;
    if (m_rows[row].blocks) m_rows[row].blocks->setStreaming(false);
    changed(row, {StreamingRole, ErrorRole});
}

void ChatModel::clear() {
    if (m_rows.isEmpty()) return;
    beginResetModel();
    const QVector<Message> old = std::exchange(m_rows, {});
    endResetModel();
    for (const Message& m : old)
        if (m.blocks) m.blocks->deleteLater(); // delegates may still hold it until they go
    emit countChanged();
}

void ChatModel::setTurnStats(int row, double hitRate, double mibPerToken,
                             double prefillMibPerToken) {
    if (row < 0 || row >= m_rows.size()) return;
    m_rows[row].hitRate = hitRate;
    m_rows[row].mibPerToken = mibPerToken;
    m_rows[row].prefillMibPerToken = prefillMibPerToken;
    changed(row, {HitRateRole, MibPerTokenRole, PrefillMibPerTokenRole});
}

void ChatModel::resume(int row) {
    if (row < 0 || row >= m_rows.size()) return;
    Message& m = m_rows[row];
    m.streaming = true;
    m.stopReason.clear();
    m.error.clear();
    if (m.blocks) m.blocks->setStreaming(true);
    changed(row, {StreamingRole, StopReasonRole, ErrorRole, CanContinueRole});
}

void ChatModel::replaceAll(const QVector<Message>& rows) {
    beginResetModel();
    const QVector<Message> old = std::exchange(m_rows, rows);
    for (Message& m : m_rows) {
        // The rows are values: their answers get blocks of their own, parsed whole.
        m.blocks = nullptr;
        if (m.role != QLatin1String("assistant")) continue;
        m.blocks = new MessageBlocks(this);
        m.blocks->setText(m.text);
        m.blocks->setStreaming(m.streaming);
    }
    endResetModel();
    for (const Message& m : old)
        if (m.blocks) m.blocks->deleteLater();
    emit countChanged();
}

void ChatModel::truncate(int row) {
    if (row < 0 || row >= m_rows.size()) return;
    beginRemoveRows({}, row, int(m_rows.size()) - 1);
    const QVector<Message> gone = m_rows.mid(row);
    m_rows.resize(row);
    endRemoveRows();
    for (const Message& m : gone)
        if (m.blocks) m.blocks->deleteLater();
    emit countChanged();
}

std::vector<ChatMessage> ChatModel::conversation(int endRow) const {
    std::vector<ChatMessage> out;
    const int end = endRow < 0 ? int(m_rows.size()) : std::min(endRow, int(m_rows.size()));
    for (int i = 0; i < end; ++i) {
        const Message& m = m_rows[i];
        if (!m.error.isEmpty() || m.text.isEmpty()) {
            // A failed or empty answer also takes its question out, so that roles keep
            // alternating (several families' templates raise an exception otherwise).
            if (m.role == QLatin1String("assistant") && !out.empty() && out.back().role == "user")
                out.pop_back();
            continue;
        }
        out.push_back({m.role.toStdString(), m.text.toStdString()});
    }
    return out;
}

void ChatModel::changed(int row, const QList<int>& roles) {
    const QModelIndex i = index(row);
    emit dataChanged(i, i, roles);
}

} // namespace coli::app
