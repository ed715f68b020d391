#pragma once
// Builds the main window: loads the Colibri QML module's Main with the controller as its
// `controller` property. Shared by main() and the GUI test so both run the same code.
// Thread-safety: GUI thread only.
#include <QString>

class QQmlApplicationEngine;
class QQuickWindow;

namespace coli::app {

class EngineController;

// Extra QML import folders are searched before the defaults: the installed layout
// (<bin>/../lib/colibri/qml) is added automatically. Returns nullptr and sets *error on failure.
QQuickWindow* createMainWindow(QQmlApplicationEngine& engine, EngineController* controller,
                               const QStringList& importDirs, QString* error);

} // namespace coli::app
