#include "tier_rows_model.h"

namespace coli::app {

TierRowsModel::TierRowsModel(QObject* parent) : QAbstractListModel(parent) {}

int TierRowsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

QVariant TierRowsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const TierRow& r = m_rows[size_t(index.row())];
    switch (role) {
    case KeyRole:
        return r.key;
    case Qt::DisplayRole:
    case NameRole:
        return r.name;
    case AvailableRole:
        return r.available;
    case ExpertsRole:
        return r.experts;
    case BytesRole:
        return r.bytes;
    case ShareRole:
        return r.share;
    case CapacityRole:
        return r.capacity;
    case HitLastRole:
        return r.hitLast;
    case HitSessionRole:
        return r.hitSession;
    default:
        return {};
    }
}

QHash<int, QByteArray> TierRowsModel::roleNames() const {
    return {{KeyRole, "key"},           {NameRole, "name"},       {AvailableRole, "available"},
            {ExpertsRole, "experts"},   {BytesRole, "bytes"},     {ShareRole, "share"},
            {CapacityRole, "capacity"}, {HitLastRole, "hitLast"}, {HitSessionRole, "hitSession"}};
}

void TierRowsModel::update(const std::vector<TierRow>& rows) {
    if (m_rows.empty() || rows.size() != m_rows.size()) {
        beginResetModel();
        m_rows = rows;
        endResetModel();
        return;
    }
    int first = -1, last = -1;
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] == m_rows[i]) continue;
        if (first < 0) first = int(i);
        last = int(i);
        m_rows[i] = rows[i];
    }
    if (first >= 0) emit dataChanged(index(first), index(last));
}

} // namespace coli::app
