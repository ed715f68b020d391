#pragma once
// The rows of the Tiers view (one per place an expert can be): VRAM, the RAM pinned hot-store,
// the RAM cache, reads in flight, free RAM budget, disk. A fixed list whose values change in
// place: update() emits one dataChanged for the rows that changed (threading contract rule 5:
// the GUI thread, in batches; ~30 Hz at most).
// Thread-safety: GUI thread only.
#include <QAbstractListModel>
#include <QString>

#include <vector>

namespace coli::app {

struct TierRow {
    QString key;            // "vram", "pinned", "cache", "loading", "free", "disk"
    QString name;           // shown: "VRAM", "Pinned hot-store", ...
    bool available = true;  // false: the tier does not exist here (VRAM without a GPU tier)
    int experts = 0;        // experts in this place now
    double bytes = 0;       // bytes they take (RAM rows: slot bytes; disk: bytes read to load)
    double share = 0;       // RAM rows: bytes / RAM budget, in [0, 1]; other rows 0
    int capacity = -1;      // experts this place may hold (hot-store); -1: no own limit
    double hitLast = -1;    // share of the last token's routed experts served here; -1: n/a
    double hitSession = -1; // the same since the session started; -1: n/a

    bool operator==(const TierRow&) const = default;
};

class TierRowsModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Role {
        KeyRole = Qt::UserRole + 1,
        NameRole,
        AvailableRole,
        ExpertsRole,
        BytesRole,
        ShareRole,
        CapacityRole,
        HitLastRole,
        HitSessionRole,
    };
    explicit TierRowsModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // Replaces the values; the row count and keys never change after the first call (the rows
    // are fixed), so a view's delegates stay. One dataChanged spanning the changed rows.
    void update(const std::vector<TierRow>& rows);
    const TierRow& at(int row) const { return m_rows[size_t(row)]; }

private:
    std::vector<TierRow> m_rows;
};

} // namespace coli::app
