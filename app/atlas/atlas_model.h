#pragma once
// The Atlas view's data and state (issue 12, docs/visualisation.md "Atlas view"): the experts of
// the loaded model as points in 3D (AtlasData: probe output or synthetic), drawn by one instanced
// draw (AtlasInstancing) with colour = dominant topic (generalists neutral), size = log heat
// (cumulative hits from TierStatus::experts), and a flash that fades over kFlashMs for experts
// routed since the previous telemetry sample. Also the orbit camera (yaw, pitch, distance,
// target: QML binds the PerspectiveCamera to cameraPosition / cameraRotation), CPU picking with
// the same view-projection matrix (Qt 6.4 has no per-instance picking), find-by-(layer, expert),
// topic toggles (hidden topics are neither drawn nor picked) and the details of the selection.
// Updates: telemetry marks entries changed; a frame tick (timer, ~30 Hz, only while something
// changes or fades and the view is active) rewrites only those entries and commits the instance
// table once (see AtlasInstancing).
// Thread-safety: GUI thread only (QObject affinity).
#include "atlas/atlas_data.h"
#include "atlas/atlas_geometry.h"
#include "atlas/atlas_instancing.h"
#include "tiers/tier_telemetry.h"

#include <QColor>
#include <QElapsedTimer>
#include <QMatrix4x4>
#include <QObject>
#include <QPointer>
#include <QQuaternion>
#include <QTimer>
#include <QVariantList>
#include <QVariantMap>
#include <QVector3D>

#include <vector>

namespace coli::app {

class TierMonitor;

class AtlasModel : public QObject {
    Q_OBJECT
    // The TierMonitor whose status feeds heat, state and flashes (null: none).
    Q_PROPERTY(QObject* tiers READ tiers WRITE setTiers NOTIFY tiersChanged)
    // The loaded model's folder: the probe's atlas is looked for there (probeFileFor()).
    Q_PROPERTY(QString modelDir READ modelDir WRITE setModelDir NOTIFY modelDirChanged)
    // False while the view is hidden: telemetry is only recorded (no flashes, no frame ticks).
    Q_PROPERTY(bool active READ active WRITE setActive NOTIFY activeChanged)
    Q_PROPERTY(bool dark READ dark WRITE setDark NOTIFY darkChanged) // the theme (flash colour)
    // "none" (no data for this model), "probe" (the topic probe's file) or "synthetic".
    Q_PROPERTY(QString source READ source NOTIFY dataChanged)
    Q_PROPERTY(QString sourceText READ sourceText NOTIFY dataChanged) // what is shown, in words
    Q_PROPERTY(int count READ count NOTIFY dataChanged)
    Q_PROPERTY(int layers READ layers NOTIFY dataChanged)
    Q_PROPERTY(int expertsPerLayer READ expertsPerLayer NOTIFY dataChanged)
    // [{name, color, visible, experts, specialists}] per topic, then the generalists' entry
    // ({name: "generalist", index: -1, ...}).
    Q_PROPERTY(QVariantList legend READ legend NOTIFY legendChanged)
    Q_PROPERTY(int selected READ selected NOTIFY selectionChanged) // point index, -1: none
    // {layer, expert, topic, specialist, shares: [{name, share}] (top 3), hits, state}; {} if none
    Q_PROPERTY(QVariantMap details READ details NOTIFY selectionChanged)
    Q_PROPERTY(QObject* instancing READ instancingObject CONSTANT)
    // The point mesh: octahedra, or tetrahedra above kTetrahedraFrom points (cheaper to draw).
    Q_PROPERTY(QObject* geometry READ geometryObject NOTIFY dataChanged)
    Q_PROPERTY(QVector3D cameraPosition READ cameraPosition NOTIFY cameraChanged)
    Q_PROPERTY(QQuaternion cameraRotation READ cameraRotation NOTIFY cameraChanged)
    Q_PROPERTY(double fieldOfView READ fieldOfView CONSTANT) // vertical, degrees
    Q_PROPERTY(double clipNear READ clipNear NOTIFY cameraChanged)
    Q_PROPERTY(double clipFar READ clipFar NOTIFY cameraChanged)
    Q_PROPERTY(double yaw READ yaw NOTIFY cameraChanged)
    Q_PROPERTY(double pitch READ pitch NOTIFY cameraChanged)
    Q_PROPERTY(int flashing READ flashing NOTIFY statsChanged) // points flashing now
    Q_PROPERTY(int rewrittenLast READ rewrittenLast NOTIFY statsChanged)
public:
    static constexpr int kFlashMs = 1000; // a routed expert's flash fades over this time
    // ... in this many steps: a flashing point is rewritten at most this often, not every tick
    static constexpr int kFlashSteps = 10;
    static constexpr int kTickMs = 33;            // frame tick while something changes (~30 Hz)
    static constexpr double kPickRadiusPx = 14;   // a click selects the nearest point this close
    static constexpr int kTetrahedraFrom = 25000; // points drawn as tetrahedra from this many on

    explicit AtlasModel(QObject* parent = nullptr);

    // Shows `data` (source "probe" or "synthetic"); resets heat, flashes, selection, camera.
    void setAtlas(atlas::AtlasData data, const QString& source);
    const atlas::AtlasData& atlas() const { return m_data; }
    // A synthetic atlas (atlas::syntheticAtlas) for demos, tests and benchmarks.
    Q_INVOKABLE void loadSynthetic(int layers, int experts, int topics, int seed = 1);
    // Loads the probe's JSON file; false (and the view keeps what it had) with `lastError` set.
    Q_INVOKABLE bool loadFile(const QString& path);
    Q_INVOKABLE void clear(); // no data ("none")
    QString lastError() const { return m_lastError; }
    // Where the probe's atlas of the model in `dir` is looked for: <dir>/atlas.json (the file
    // `coli atlas DIR --json DIR/atlas.json` writes; docs/visualisation.md).
    static QString probeFileFor(const QString& dir);
    // Shows what there is for modelDir: its probe file, else nothing ("none"); a synthetic atlas
    // stays. Called when the model changes, and when the controller's stored probe goes away.
    void reloadForModel();

    // Heat, state and flashes from the engine's per-expert map (the 30 Hz sample). Points whose
    // hits grew since the previous map start a flash. A map of another shape is ignored.
    void applyExperts(const tiers::ExpertMap& map);

    // Camera: drag in pixels (orbit: 0.3 degree per pixel; pitch within +-89), wheel steps
    // (zoom: x0.9 per step in), pan by pixels of a view `w` x `h`.
    Q_INVOKABLE void orbit(double dxPx, double dyPx);
    Q_INVOKABLE void zoom(double steps);
    Q_INVOKABLE void pan(double dxPx, double dyPx, double w, double h);
    Q_INVOKABLE void setCameraAngles(double yawDeg, double pitchDeg);
    Q_INVOKABLE void resetCamera(); // the whole atlas in view
    // The view-projection matrix of the camera for a viewport of `w` x `h` pixels (Quick 3D's
    // conventions: right-handed, the camera looks down its -Z, vertical field of view).
    QMatrix4x4 viewProjection(double w, double h) const;
    // Where point `index` appears in a `w` x `h` viewport (pixels, origin top left); (-1, -1)
    // when it is behind the camera or out of range.
    Q_INVOKABLE QPointF projectPoint(int index, double w, double h) const;
    // The visible point nearest to (x, y) within kPickRadiusPx (viz::pickNearest: the lower index
    // on a tie), or -1. Pure: selects nothing. O(points).
    Q_INVOKABLE int pick(double x, double y, double w, double h) const;
    Q_INVOKABLE int selectAt(double x, double y, double w, double h); // pick() then select it
    Q_INVOKABLE void select(int index);                               // -1: none
    // Selects expert (layer, expert) and centres the camera on it; false when there is no such
    // point (or it is hidden).
    Q_INVOKABLE bool findExpert(int layer, int expert);
    Q_INVOKABLE int indexOf(int layer, int expert) const;
    // Topic toggles: `topic` -1 is the generalists.
    Q_INVOKABLE void setTopicVisible(int topic, bool visible);

    // The frame tick: advances flashes by the time since the last tick (or by `ms` with a manual
    // clock), rewrites the changed entries and commits the table once. Returns entries rewritten.
    Q_INVOKABLE int advance(int ms);
    int tick();
    // Tests and benchmarks drive time themselves: no timer, advance(ms) only.
    void setManualClock(bool manual);

    QObject* tiers() const;
    void setTiers(QObject* t);
    QString modelDir() const { return m_modelDir; }
    void setModelDir(const QString& dir);
    bool active() const { return m_active; }
    void setActive(bool a);
    bool dark() const { return m_dark; }
    void setDark(bool d);
    QString source() const { return m_source; }
    QString sourceText() const;
    int count() const { return int(m_data.experts.size()); }
    int layers() const { return m_data.nLayers; }
    int expertsPerLayer() const { return m_data.nExperts; }
    QVariantList legend() const;
    int selected() const { return m_selected; }
    QVariantMap details() const;
    AtlasInstancing* instancing() { return m_instancing; }
    QObject* instancingObject() { return m_instancing; }
    QObject* geometryObject() { return tetrahedra() ? m_tetrahedron : m_geometry; }
    bool tetrahedra() const { return count() >= kTetrahedraFrom; }
    QVector3D cameraPosition() const;
    QQuaternion cameraRotation() const;
    double fieldOfView() const { return 50.0; }
    double clipNear() const { return m_distance * 0.01; }
    double clipFar() const { return m_distance + 4 * m_radius + 100; }
    double yaw() const { return m_yaw; }
    double pitch() const { return m_pitch; }
    int flashing() const { return int(m_flashList.size()); }
    int rewrittenLast() const { return m_instancing->rewrittenLast(); }
    uint32_t hits(int index) const { return m_hits[size_t(index)]; }
    QColor topicColor(int topic) const; // -1: generalists

signals:
    void tiersChanged();
    void modelDirChanged();
    void activeChanged();
    void darkChanged();
    void dataChanged();
    void legendChanged();
    void selectionChanged();
    void cameraChanged();
    void statsChanged();

private:
    void onTiers();
    void markChanged(int i);
    void markAll();
    void writeEntry(int i);
    void scheduleTick();
    bool visible(int i) const;
    float sizeOf(int i) const;
    int flashLevel(int i) const; // fade step of a flashing point now: 0..kFlashSteps (ended)

    atlas::AtlasData m_data;
    QString m_source = QStringLiteral("none");
    QString m_lastError, m_modelDir;
    AtlasInstancing* m_instancing;
    AtlasPointGeometry* m_geometry;    // octahedron
    AtlasPointGeometry* m_tetrahedron; // for big atlases
    QPointer<TierMonitor> m_tiers;
    bool m_active = true, m_dark = false;
    std::vector<uint32_t> m_hits;       // per point: cumulative hits of the last map
    std::vector<uint8_t> m_state;       // per point: ExpertState byte of the last map
    std::vector<size_t> m_mapIndex;     // per point: layer * nExperts + expert
    std::vector<uint8_t> m_topicOn;     // per topic + 1 (index 0: generalists)
    std::vector<QVector4D> m_topicRgba; // per topic + 1: the entry colour
    float m_baseSize = 1;               // radius of a cold point (scene units)
    std::vector<qint64> m_flashStart;   // per point: clock ms of its flash start, -1: none
    std::vector<uint8_t> m_flashLevel;  // per point: the fade step last written (0: brightest)
    std::vector<int> m_flashList;       // points flashing
    std::vector<uint8_t> m_dirty;
    std::vector<int> m_dirtyList;
    bool m_haveMap = false;
    int m_selected = -1;
    // Camera: orbit about m_target.
    QVector3D m_target, m_centre;
    double m_yaw = 30, m_pitch = -20, m_distance = 300, m_radius = 100;
    // Clock for flashes (ms): real time, or advanced by hand.
    QElapsedTimer m_clock;
    qint64 m_now = 0;
    bool m_manual = false;
    QTimer m_timer;
};

} // namespace coli::app
