#include "markdown/message_blocks.h"

#include <QClipboard>
#include <QGuiApplication>

namespace coli::app {

using markdown::Block;
using markdown::BlockKind;

namespace {
QString kindName(BlockKind k) {
    switch (k) {
    case BlockKind::Code:
        return QStringLiteral("code");
    case BlockKind::Think:
        return QStringLiteral("think");
    case BlockKind::Prose:
        break;
    }
    return QStringLiteral("prose");
}
} // namespace

MessageBlocks::MessageBlocks(QObject* parent) : QAbstractListModel(parent) {}

int MessageBlocks::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

QVariant MessageBlocks::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Block& b = m_rows[size_t(index.row())];
    switch (role) {
    case KindRole:
        return kindName(b.kind);
    case Qt::DisplayRole:
    case TextRole:
        return QString::fromStdString(b.text);
    case HtmlRole:
        return QString::fromStdString(b.html);
    case LanguageRole:
        return QString::fromStdString(b.language);
    case OpenRole:
        return isOpen(index.row());
    case ThinkSecondsRole:
        return b.kind == BlockKind::Think ? m_thinkSeconds : -1.0;
    default:
        return {};
    }
}

QHash<int, QByteArray> MessageBlocks::roleNames() const {
    return {{KindRole, "kind"},         {TextRole, "text"}, {HtmlRole, "html"},
            {LanguageRole, "language"}, {OpenRole, "open"}, {ThinkSecondsRole, "thinkSeconds"}};
}

bool MessageBlocks::isOpen(int row) const {
    return m_streaming && row >= int(m_stream.finalCount());
}

void MessageBlocks::append(const QString& piece) {
    if (piece.isEmpty()) return;
    const bool hadThink = m_stream.hasThink();
    const bool thinking = m_stream.thinkOpen();
    const size_t finalBefore = m_stream.finalCount();
    m_stream.append(piece.toStdString());
    if (!hadThink && m_stream.hasThink()) m_thinkTimer.start();
    if ((thinking || !hadThink) && m_stream.hasThink() && !m_stream.thinkOpen() &&
        m_thinkTimer.isValid()) {
        m_thinkSeconds = double(m_thinkTimer.elapsed()) / 1000.0;
        m_thinkSecondsChanged = true;
    }
    sync(finalBefore);
}

void MessageBlocks::setStreaming(bool streaming) {
    if (streaming == m_streaming) return;
    m_streaming = streaming;
    if (!streaming) m_stream.finish(); // may re-parse the whole answer once (see BlockStream)
    sync(0);
    emit streamingChanged();
}

void MessageBlocks::setText(const QString& text) {
    beginResetModel();
    m_stream.clear();
    m_stream.append(text.toStdString());
    m_stream.finish();
    m_rows = m_stream.blocks();
    m_thinkSeconds = -1;
    m_openFrom = m_streaming ? int(m_stream.finalCount()) : int(m_rows.size());
    endResetModel();
    emit countChanged();
}

// Tells the view what changed since the last sync. Rows before `firstChanged` were final then, so
// only their `open` role can change (when streaming starts or ends).
void MessageBlocks::sync(size_t firstChanged) {
    const std::vector<Block>& now = m_stream.blocks();
    const size_t oldCount = m_rows.size();
    const size_t common = std::min(oldCount, now.size());
    const int openFrom = m_streaming ? int(m_stream.finalCount()) : int(now.size());
    const size_t from = std::min({firstChanged, size_t(m_openFrom), size_t(openFrom)});
    for (size_t i = from; i < common; ++i) {
        QList<int> roles;
        Block& old = m_rows[i];
        const Block& b = now[i];
        if (i >= firstChanged) {
            if (old.kind != b.kind) roles << KindRole << ThinkSecondsRole;
            if (old.text != b.text) roles << TextRole;
            if (old.html != b.html) roles << HtmlRole;
            if (old.language != b.language) roles << LanguageRole;
            if (b.kind == BlockKind::Think && m_thinkSecondsChanged) roles << ThinkSecondsRole;
            old = b;
        }
        if ((int(i) >= m_openFrom) != (int(i) >= openFrom)) roles << OpenRole;
        if (!roles.isEmpty()) {
            const QModelIndex ix = index(int(i));
            emit dataChanged(ix, ix, roles);
        }
    }
    m_openFrom = openFrom;
    m_thinkSecondsChanged = false;
    if (now.size() > oldCount) {
        beginInsertRows({}, int(oldCount), int(now.size()) - 1);
        m_rows.insert(m_rows.end(), now.begin() + long(oldCount), now.end());
        endInsertRows();
        emit countChanged();
    } else if (now.size() < oldCount) {
        beginRemoveRows({}, int(now.size()), int(oldCount) - 1);
        m_rows.resize(now.size());
        endRemoveRows();
        emit countChanged();
    }
}

void MessageBlocks::copyToClipboard(int row) const {
    if (row < 0 || row >= int(m_rows.size())) return;
    if (QClipboard* cb = QGuiApplication::clipboard())
        cb->setText(QString::fromStdString(m_rows[size_t(row)].text));
}

} // namespace coli::app
