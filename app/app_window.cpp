#include "app_window.h"

#include "engine_controller.h"

#include <QCoreApplication>
#include <QDir>
#include <QQmlApplicationEngine>
#include <QQmlComponent>
#include <QQuickWindow>

namespace coli::app {

QQuickWindow* createMainWindow(QQmlApplicationEngine& engine, EngineController* controller,
                               const QStringList& importDirs, QString* error) {
    // The build tree puts the module next to the binary (a default import path); an install puts
    // it under lib/colibri/qml.
    const QString installed = QCoreApplication::applicationDirPath() + "/../lib/colibri/qml";
    if (QDir(installed).exists()) engine.addImportPath(QDir::cleanPath(installed));
    for (const QString& d : importDirs)
        engine.addImportPath(d);

    QStringList warnings;
    auto conn = QObject::connect(&engine, &QQmlApplicationEngine::warnings, &engine,
                                 [&](const QList<QQmlError>& ws) {
                                     for (const auto& w : ws)
                                         warnings << w.toString();
                                 });
    engine.setInitialProperties(
        {{QStringLiteral("controller"), QVariant::fromValue<QObject*>(controller)}});
    // Qt 6.4 has no loadFromModule(); importing the module loads its plugin (docs/design.md,
    // "Qt 6.4 facts").
    engine.loadData("import Colibri\nMain {}", QUrl(QStringLiteral("qrc:/colibri_bootstrap.qml")));
    QObject::disconnect(conn);
    QQuickWindow* win = engine.rootObjects().isEmpty()
                            ? nullptr
                            : qobject_cast<QQuickWindow*>(engine.rootObjects().first());
    if (!win && error)
        *error = QStringLiteral("could not create the main window (QML module Colibri): ") +
                 (warnings.isEmpty() ? QStringLiteral("no root object") : warnings.join("; "));
    return win;
}

} // namespace coli::app
