#pragma once
// Shared by the window tests: the warnings logged while a test runs (QML errors arrive as
// qWarning; install with `g_previous = qInstallMessageHandler(recordWarnings)`), and the items
// of a window found by objectName (delegates are not QObject children of their view, so
// findChild misses them: walk the item tree).
#include <QList>
#include <QQuickItem>
#include <QString>
#include <QStringList>
#include <QtGlobal>

inline QStringList g_warnings;
inline QtMessageHandler g_previous = nullptr;

inline void recordWarnings(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (type == QtWarningMsg || type == QtCriticalMsg) g_warnings << msg;
    if (g_previous) g_previous(type, ctx, msg);
}

inline void collectItems(QQuickItem* root, const QString& name, QList<QQuickItem*>* out) {
    for (QQuickItem* child : root->childItems()) {
        if (child->objectName() == name) out->append(child);
        collectItems(child, name, out);
    }
}
