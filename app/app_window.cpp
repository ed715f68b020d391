#include "app_window.h"
#include "atlas/atlas_model.h"
#include "atlas/atlas_probe_data.h"

#include "app_options.h"
#include "app_settings.h"
#include "brain_item.h"
#include "engine_controller.h"
#include "wizard/wizard_controller.h"

#include <QCoreApplication>
#include <QDir>
#include <QKeyEvent>
#include <QKeySequence>
#include <QQmlApplicationEngine>
#include <QQmlComponent>
#include <QQuickWindow>
#include <QTimer>

namespace coli::app {

namespace {
// Qt 6.4's read-only TextEdit (a message's text, the banner) accepts every ShortcutOverride once
// it has the focus (a click gives it), so no window shortcut fired until the composer was
// clicked again. This filter answers the override for it: only the keys a read-only text uses
// itself (copy, select all, moving the selection) stay with it; the rest reach the shortcuts
// (and, when none matches, still arrive at the text as key presses).
class ReadOnlyTextShortcuts : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* receiver, QEvent* e) override {
        if (e->type() != QEvent::ShortcutOverride || !receiver->inherits("QQuickTextEdit") ||
            !receiver->property("readOnly").toBool())
            return false;
        auto* ke = static_cast<QKeyEvent*>(e);
        if (ke->matches(QKeySequence::Copy) || ke->matches(QKeySequence::SelectAll) ||
            isSelectionKey(ke->key()))
            return false;
        ke->ignore();
        return true;
    }

private:
    static bool isSelectionKey(int key) {
        switch (key) {
        case Qt::Key_Left:
        case Qt::Key_Right:
        case Qt::Key_Up:
        case Qt::Key_Down:
        case Qt::Key_Home:
        case Qt::Key_End:
        case Qt::Key_PageUp:
        case Qt::Key_PageDown:
            return true;
        default:
            return false;
        }
    }
};

void installReadOnlyTextShortcuts() {
    static ReadOnlyTextShortcuts* filter = nullptr; // one per application, owned by it
    if (filter || !QCoreApplication::instance()) return;
    filter = new ReadOnlyTextShortcuts(QCoreApplication::instance());
    QCoreApplication::instance()->installEventFilter(filter);
}
} // namespace

void connectSettings(AppSettings* settings, EngineController* controller, int fallbackThreads) {
    controller->setLoadSettings(settings->loadSettings(fallbackThreads));
    auto loadOptions = [=] {
        controller->setLoadSettings(settings->loadSettings(fallbackThreads));
    };
    QObject::connect(settings, &AppSettings::threadsChanged, controller, loadOptions);
    // The RAM budget and prefetch also apply to the loaded model at once (between two tokens,
    // as the Tiers view's controls do); the Tiers view's own changes last for this run only.
    QObject::connect(settings, &AppSettings::ramBudgetChanged, controller, [=] {
        loadOptions();
        if (settings->ramBudgetMiB() > 0)
            controller->tiers()->setBudgetBytes(double(settings->ramBudgetMiB()) * 1048576.0);
    });
    QObject::connect(settings, &AppSettings::prefetchChanged, controller, [=] {
        loadOptions();
        controller->tiers()->setPrefetchEnabled(settings->prefetch());
    });
    // The VRAM budget: every load applies it; a change applies to the loaded model at once
    // (between two answers); a budget the Tiers view put in force is remembered for the next
    // loads (the engine reports what it applied, in whole experts).
    QObject::connect(settings, &AppSettings::vramBudgetChanged, controller, [=] {
        loadOptions();
        const double bytes = settings->vramBudgetMiB() * 1048576.0;
        if (bytes > 0 && bytes != controller->tiers()->vramBudgetBytes())
            controller->tiers()->setVramBudgetBytes(bytes);
    });
    QObject::connect(controller, &EngineController::vramBudgetApplied, settings,
                     [=](double bytes) { settings->setVramBudgetMiB(bytes / 1048576.0); });
    QObject::connect(settings, &AppSettings::readModeChanged, controller, loadOptions);
    QObject::connect(settings, &AppSettings::mirrorFolderChanged, controller, loadOptions);
    QObject::connect(settings, &AppSettings::gpuDeviceChanged, controller, loadOptions);
    QObject::connect(settings, &AppSettings::samplingChanged, controller, [=] {
        GenerateParams p = controller->generateParams();
        p.maxNewTokens = settings->maxNewTokens();
        SamplingOverrides s = settings->samplingOverrides();
        s.seed = controller->samplingOverrides().seed;
        controller->setGenerateParams(p, s);
    });
    QObject::connect(controller, &EngineController::loadStateChanged, settings, [=] {
        const QString state = controller->loadState();
        if (state == QStringLiteral("ready") || state == QStringLiteral("error"))
            settings->modelLoadEnded(controller->modelDir(), state == QStringLiteral("ready"));
    });
}

QQuickWindow* createMainWindow(QQmlApplicationEngine& engine, EngineController* controller,
                               const QStringList& importDirs, QString* error, AppSettings* settings,
                               QObject* sessions, QObject* turnStats) {
    installReadOnlyTextShortcuts();
    registerBrainTypes();
    if (!settings) {
        settings = new AppSettings(QString(), &engine);
        connectSettings(settings, controller, 0); // 0: the worker's own threads
    }
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
    // The Atlas view's model: heat and flashes from the controller's tier status, the probe's
    // atlas of the loaded model (docs/visualisation.md).
    auto* atlas = new AtlasModel(&engine);
    if (controller) {
        atlas->setTiers(controller->tiers());
        atlas->setModelDir(controller->modelDir());
        QObject::connect(controller, &EngineController::modelChanged, atlas,
                         [atlas, controller] { atlas->setModelDir(controller->modelDir()); });
        // The newest stored probe of the loaded model (after a load, or a run just finished).
        QObject::connect(
            controller, &EngineController::atlasProbeChanged, atlas, [atlas, controller] {
                if (auto p = controller->atlasProbe())
                    atlas->setAtlas(
                        atlas::atlasFromProbe(*p, controller->modelName().toStdString()),
                        QStringLiteral("probe"));
                else
                    atlas->reloadForModel();
            });
        // The Brain's hover names each expert's top topics from the same probe; the probe can
        // arrive before the Brain knows the model's shape (its first tier status), so both
        // events refresh it.
        BrainMonitor* brain = controller->brain();
        const auto brainTopics = [brain, controller] {
            const auto p = controller->atlasProbe();
            std::vector<float> shares;
            if (p)
                shares = atlas::brainTopicProfiles(*p, brain->cells().nLayers(),
                                                   brain->cells().nExperts());
            QStringList labels;
            if (!shares.empty())
                for (const storage::AtlasTopic& t : p->topics)
                    labels << QString::fromStdString(t.label.empty() ? t.name : t.label);
            brain->setTopicShares(std::move(shares), labels);
        };
        QObject::connect(controller, &EngineController::atlasProbeChanged, brain, brainTopics);
        QObject::connect(brain, &BrainMonitor::shapeChanged, brain, brainTopics);
    }
    // The model wizard (Get a model…): its worker thread lives as long as the window's engine.
    auto* wizard = new WizardController(controller, settings, &engine);
    engine.setInitialProperties(
        {{QStringLiteral("controller"), QVariant::fromValue<QObject*>(controller)},
         {QStringLiteral("wizard"), QVariant::fromValue<QObject*>(wizard)},
         {QStringLiteral("atlas"), QVariant::fromValue<QObject*>(atlas)},
         {QStringLiteral("appSettings"), QVariant::fromValue<QObject*>(settings)},
         {QStringLiteral("sessions"), QVariant::fromValue<QObject*>(sessions)},
         {QStringLiteral("turnStats"), QVariant::fromValue<QObject*>(turnStats)}});
    // Qt 6.4 has no loadFromModule(); importing the module loads its plugin (docs/design.md,
    // "Qt 6.4 facts").
    engine.loadData("import Colibri\nMain {}", QUrl(QStringLiteral("qrc:/colibri_bootstrap.qml")));
    QObject::disconnect(conn);
    QQuickWindow* win = engine.rootObjects().isEmpty()
                            ? nullptr
                            : qobject_cast<QQuickWindow*>(engine.rootObjects().first());
    if (win && controller) controller->setFrameWindow(win);
    if (win) {
        // The size the window had when it was last closed (a user who made it larger keeps it),
        // within the window's minimum; the screen's limits are the window system's.
        const QSize saved = settings->windowSize();
        if (saved.isValid())
            win->resize(saved.expandedTo(win->minimumSize()).expandedTo(QSize(1, 1)));
        // Saved half a second after the user stops resizing, so that every way out (the window
        // closed, Ctrl+Q, a crash) keeps it. A maximised or full-screen window keeps the size it
        // had before (that state is the window system's to restore).
        auto* saveTimer = new QTimer(win);
        saveTimer->setSingleShot(true);
        saveTimer->setInterval(500);
        QObject::connect(saveTimer, &QTimer::timeout, settings, [win, settings] {
            if (win->windowState() == Qt::WindowNoState) settings->setWindowSize(win->size());
        });
        QObject::connect(win, &QWindow::widthChanged, saveTimer, qOverload<>(&QTimer::start));
        QObject::connect(win, &QWindow::heightChanged, saveTimer, qOverload<>(&QTimer::start));
    }
    if (!win && error)
        *error = QStringLiteral("could not create the main window (QML module Colibri): ") +
                 (warnings.isEmpty() ? QStringLiteral("no root object") : warnings.join("; "));
    return win;
}

} // namespace coli::app
