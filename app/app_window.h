#pragma once
// Builds the main window: loads the Colibri QML module's Main with the controller as its
// `controller` property. Shared by main() and the GUI test so both run the same code.
// Thread-safety: GUI thread only.
#include <QString>

class QObject;
class QQmlApplicationEngine;
class QQuickWindow;

namespace coli::app {

class AppSettings;
class EngineController;

// Extra QML import folders are searched before the defaults: the installed layout
// (<bin>/../lib/colibri/qml) is added automatically. `settings` (the window's `appSettings`) is
// connected to the controller with connectSettings(); when null, one with no default model is
// made, owned by `engine`. Returns nullptr and sets *error on failure.
// `sessions` (SessionManager) and `turnStats` (TurnStatsModel) become the window's `sessions`
// and `turnStats` properties; null: the window works without saved chats and charts.
// The window's `atlas` property is an AtlasModel made here (owned by `engine`), fed by the
// controller's tier status and loaded model (app/atlas/atlas_model.h).
QQuickWindow* createMainWindow(QQmlApplicationEngine& engine, EngineController* controller,
                               const QStringList& importDirs, QString* error,
                               AppSettings* settings = nullptr, QObject* sessions = nullptr,
                               QObject* turnStats = nullptr);

// Keeps the controller in step with the settings from now on: load options for the next loads,
// sampling and max new tokens for the next answers (on change only: what the command line set
// stays until the user changes a setting), and tells the settings when a load ends (the recent
// list, the start folder). `fallbackThreads`: threads when the setting is 0 (automatic).
void connectSettings(AppSettings* settings, EngineController* controller, int fallbackThreads);

} // namespace coli::app
