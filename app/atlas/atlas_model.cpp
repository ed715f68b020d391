#include "atlas/atlas_model.h"

#include "tier_monitor.h"
#include "viz/atlas_pick.h"
#include "viz/palette.h"

#include <QFileInfo>
#include <QtMath>

#include <algorithm>
#include <cmath>
#include <span>

namespace coli::app {
namespace {

// The Atlas palette (viz/palette.h): topic colours pairwise CIEDE2000 >= 10, a neutral grey for
// generalists.
QColor toQColor(const viz::Rgba8& c) {
    return QColor(c.r, c.g, c.b, c.a);
}

QString stateName(uint8_t s) {
    QString name;
    switch (tiers::ExpertState(s & tiers::kExpertStateMask)) {
    case tiers::ExpertState::Disk:
        name = QStringLiteral("on disk");
        break;
    case tiers::ExpertState::Loading:
        name = QStringLiteral("loading");
        break;
    case tiers::ExpertState::Cached:
        name = QStringLiteral("cached");
        break;
    case tiers::ExpertState::Pinned:
        name = QStringLiteral("pinned");
        break;
    case tiers::ExpertState::Vram:
        name = QStringLiteral("in VRAM");
        break;
    default:
        name = QStringLiteral("unknown");
        break;
    }
    if (s & tiers::kUserPinFlag) name += QStringLiteral(" (user pin)");
    return name;
}

QVector4D rgba(const QColor& c) {
    return QVector4D(c.redF(), c.greenF(), c.blueF(), 1.0f);
}

} // namespace

AtlasModel::AtlasModel(QObject* parent)
    : QObject(parent), m_instancing(new AtlasInstancing), m_geometry(new AtlasPointGeometry),
      m_tetrahedron(new AtlasPointGeometry(AtlasPointGeometry::Shape::Tetrahedron)) {
    // Quick 3D objects made in C++: owned here (QObject parent), put into the scene by QML.
    m_instancing->setParent(this);
    m_geometry->setParent(this);
    m_tetrahedron->setParent(this);
    m_clock.start();
    m_timer.setInterval(kTickMs);
    connect(&m_timer, &QTimer::timeout, this, [this] { tick(); });
}

QString AtlasModel::probeFileFor(const QString& dir) {
    return dir.isEmpty() ? QString() : dir + QStringLiteral("/atlas.json");
}

void AtlasModel::setAtlas(atlas::AtlasData data, const QString& source) {
    m_data = std::move(data);
    m_source = source;
    const size_t n = m_data.experts.size();
    m_hits.assign(n, 0);
    m_state.assign(n, uint8_t(tiers::ExpertState::Disk));
    m_mapIndex.resize(n);
    for (size_t i = 0; i < n; ++i)
        m_mapIndex[i] =
            size_t(m_data.experts[i].layer) * size_t(m_data.nExperts) + m_data.experts[i].expert;
    m_topicOn.assign(m_data.topics.size() + 1, 1);
    // Per-entry constants, computed once: colours by topic (index 0: generalists), base size.
    m_topicRgba.clear();
    for (int t = -1; t < int(m_data.topics.size()); ++t)
        m_topicRgba.push_back(rgba(topicColor(t)));
    m_flashStart.assign(n, -1);
    m_flashLevel.assign(n, 0);
    m_flashList.clear();
    m_dirty.assign(n, 0);
    m_dirtyList.clear();
    m_haveMap = false;
    m_selected = -1;
    m_instancing->resize(int(n));
    markAll();
    // The camera frames the cloud: centre = mean, radius = the 98th percentile distance (a few
    // outliers must not shrink everything else).
    QVector3D c;
    for (const auto& e : m_data.experts)
        c += QVector3D(e.x, e.y, e.z);
    if (n) c /= float(n);
    std::vector<float> d;
    d.reserve(n);
    for (const auto& e : m_data.experts)
        d.push_back((QVector3D(e.x, e.y, e.z) - c).length());
    float r = 1;
    if (!d.empty()) {
        const size_t k = std::min(d.size() - 1, size_t(double(d.size()) * 0.98));
        std::nth_element(d.begin(), d.begin() + long(k), d.end());
        r = d[k] > 0 ? d[k] : 1.0f;
    }
    m_centre = c;
    m_radius = r;
    // Fewer points get bigger ones (about the spacing of points in a ball of the cloud's radius).
    m_baseSize = r * std::clamp(0.3f / std::cbrt(float(std::max<size_t>(1, n))), 0.008f, 0.035f);
    if (tetrahedra()) m_baseSize *= 1.25f; // a tetrahedron shows less area than an octahedron
    resetCamera();
    if (m_tiers) onTiers(); // heat of the model running now, without a flash
    emit dataChanged();
    emit legendChanged();
    emit selectionChanged();
    tick();
}

void AtlasModel::loadSynthetic(int layers, int experts, int topics, int seed) {
    setAtlas(atlas::syntheticAtlas(layers, experts, topics, uint64_t(seed)),
             QStringLiteral("synthetic"));
}

bool AtlasModel::loadFile(const QString& path) {
    auto r = atlas::readAtlasJson(path.toStdString());
    if (!r) {
        m_lastError = QString::fromStdString(r.status().message());
        return false;
    }
    m_lastError.clear();
    setAtlas(std::move(r).value(), QStringLiteral("probe"));
    return true;
}

void AtlasModel::clear() {
    setAtlas({}, QStringLiteral("none"));
}

QString AtlasModel::sourceText() const {
    if (m_source == QLatin1String("synthetic"))
        return tr("Synthetic atlas: %1 experts (%2 layers x %3), %4 topics — not a real model")
            .arg(count())
            .arg(m_data.nLayers)
            .arg(m_data.nExperts)
            .arg(m_data.topics.size());
    if (m_source == QLatin1String("probe"))
        return tr("%1 experts (%2 layers x %3) placed by the topic probe over %4 topics")
            .arg(count())
            .arg(m_data.nLayers)
            .arg(m_data.nExperts)
            .arg(m_data.topics.size());
    return {};
}

// ---- telemetry ----

QObject* AtlasModel::tiers() const {
    return m_tiers.data();
}

void AtlasModel::setTiers(QObject* t) {
    auto* monitor = qobject_cast<TierMonitor*>(t);
    if (monitor == m_tiers) return;
    if (m_tiers) disconnect(m_tiers, nullptr, this, nullptr);
    m_tiers = monitor;
    if (m_tiers) connect(m_tiers, &TierMonitor::changed, this, &AtlasModel::onTiers);
    emit tiersChanged();
    onTiers();
}

void AtlasModel::onTiers() {
    if (m_tiers) applyExperts(m_tiers->status().experts);
}

void AtlasModel::setModelDir(const QString& dir) {
    if (dir == m_modelDir) return;
    m_modelDir = dir;
    emit modelDirChanged();
    reloadForModel();
}

void AtlasModel::reloadForModel() {
    // The model's probe file if there is one, else nothing (a synthetic atlas that a test or a
    // demo loaded by hand stays).
    const QString file = probeFileFor(m_modelDir);
    if (!file.isEmpty() && QFileInfo::exists(file)) {
        if (!loadFile(file)) clear();
    } else if (m_source != QLatin1String("synthetic")) {
        clear();
    }
}

void AtlasModel::applyExperts(const tiers::ExpertMap& map) {
    if (m_data.experts.empty() || map.nExperts != m_data.nExperts || map.hits.empty()) return;
    const bool flash = m_haveMap && m_active;
    const qint64 now = m_manual ? m_now : m_clock.elapsed();
    const size_t n = m_data.experts.size();
    for (size_t i = 0; i < n; ++i) {
        const size_t k = m_mapIndex[i];
        if (k >= map.hits.size()) continue;
        const uint32_t h = map.hits[k];
        if (k < map.state.size() && map.state[k] != m_state[i]) {
            m_state[i] = map.state[k];
            if (int(i) == m_selected) emit selectionChanged();
        }
        if (h == m_hits[i]) continue;
        if (flash && h > m_hits[i]) {
            if (m_flashStart[i] < 0) m_flashList.push_back(int(i));
            m_flashStart[i] = now;
        }
        m_hits[i] = h;
        markChanged(int(i));
    }
    m_haveMap = true;
    if (m_selected >= 0) emit selectionChanged();
    scheduleTick();
}

// ---- the instance table ----

bool AtlasModel::visible(int i) const {
    return m_topicOn[size_t(m_data.experts[size_t(i)].topic + 1)] != 0;
}

float AtlasModel::sizeOf(int i) const {
    // Radius in scene units: a floor so cold experts stay visible, then log heat, capped.
    const float base = m_baseSize;
    const float heat = std::log1p(float(m_hits[size_t(i)]));
    return base * std::min(0.75f + 0.12f * heat, 1.9f);
}

QColor AtlasModel::topicColor(int topic) const {
    return toQColor(topic < 0 ? viz::generalistColour() : viz::topicColour(topic));
}

void AtlasModel::markChanged(int i) {
    if (m_dirty[size_t(i)]) return;
    m_dirty[size_t(i)] = 1;
    m_dirtyList.push_back(i);
}

void AtlasModel::markAll() {
    for (int i = 0; i < count(); ++i)
        markChanged(i);
}

void AtlasModel::writeEntry(int i) {
    const auto& e = m_data.experts[size_t(i)];
    const QVector3D p(e.x, e.y, e.z);
    if (!visible(i)) {
        m_instancing->setEntry(i, p, 0.0f, QVector4D());
        return;
    }
    QVector4D c = m_topicRgba[size_t(e.topic + 1)];
    float s = sizeOf(i);
    if (m_flashStart[size_t(i)] >= 0) {
        // Flash: towards white (dark theme) or near-black (light theme), and bigger; fades out.
        const int level = flashLevel(i);
        m_flashLevel[size_t(i)] = uint8_t(level);
        const float f = 1.0f - float(level) / kFlashSteps;
        const QVector4D to = m_dark ? QVector4D(1, 1, 1, 1) : QVector4D(20, 20, 24, 255) / 255.0f;
        c += (to - c) * (0.85f * f);
        s *= 1.0f + 0.5f * f;
    }
    if (i == m_selected) s *= 1.6f;
    m_instancing->setEntry(i, p, s, c);
}

int AtlasModel::flashLevel(int i) const {
    const qint64 age = m_now - m_flashStart[size_t(i)];
    return int(std::clamp<qint64>(age * kFlashSteps / kFlashMs, 0, kFlashSteps));
}

int AtlasModel::tick() {
    return advance(m_manual ? 0 : -1);
}

int AtlasModel::advance(int ms) {
    m_now = ms < 0 ? m_clock.elapsed() : m_now + ms;
    // A fading flash is rewritten when it reaches its next step; an ended one once more (back to
    // its plain colour).
    for (size_t j = 0; j < m_flashList.size();) {
        const int i = m_flashList[j];
        const int level = flashLevel(i);
        if (level != m_flashLevel[size_t(i)]) markChanged(i);
        if (level >= kFlashSteps) {
            m_flashStart[size_t(i)] = -1;
            m_flashList[j] = m_flashList.back();
            m_flashList.pop_back();
        } else {
            ++j;
        }
    }
    for (int i : m_dirtyList) {
        writeEntry(i);
        m_dirty[size_t(i)] = 0;
    }
    m_dirtyList.clear();
    const int written = m_instancing->commit();
    emit statsChanged();
    if (m_flashList.empty()) m_timer.stop();
    return written;
}

void AtlasModel::scheduleTick() {
    if (m_manual || !m_active) return;
    if ((!m_dirtyList.empty() || !m_flashList.empty()) && !m_timer.isActive()) m_timer.start();
}

void AtlasModel::setManualClock(bool manual) {
    m_manual = manual;
    if (manual) m_timer.stop();
}

void AtlasModel::setActive(bool a) {
    if (a == m_active) return;
    m_active = a;
    emit activeChanged();
    if (!m_active) {
        m_timer.stop();
    } else {
        onTiers();
        scheduleTick();
    }
}

void AtlasModel::setDark(bool d) {
    if (d == m_dark) return;
    m_dark = d;
    emit darkChanged();
    for (int i : m_flashList)
        markChanged(i);
    scheduleTick();
}

// ---- legend, selection, details ----

QVariantList AtlasModel::legend() const {
    const int nt = int(m_data.topics.size());
    std::vector<int> experts(size_t(nt) + 1), specialists(size_t(nt) + 1);
    for (const auto& e : m_data.experts) {
        ++experts[size_t(e.topic + 1)];
        if (e.specialist) ++specialists[size_t(e.topic + 1)];
    }
    QVariantList out;
    for (int t = 0; t <= nt; ++t) {
        const int topic = t < nt ? t : -1; // the generalists' entry goes last
        if (topic < 0 && experts[0] == 0) continue;
        out.append(QVariantMap{
            {QStringLiteral("index"), topic},
            {QStringLiteral("name"),
             topic < 0 ? tr("generalist") : QString::fromStdString(m_data.topics[size_t(t)])},
            {QStringLiteral("color"), topicColor(topic)},
            {QStringLiteral("visible"), m_topicOn[size_t(topic + 1)] != 0},
            {QStringLiteral("experts"), experts[size_t(topic + 1)]},
            {QStringLiteral("specialists"), specialists[size_t(topic + 1)]}});
    }
    return out;
}

void AtlasModel::setTopicVisible(int topic, bool on) {
    if (topic < -1 || topic >= int(m_data.topics.size())) return;
    if ((m_topicOn[size_t(topic + 1)] != 0) == on) return;
    m_topicOn[size_t(topic + 1)] = on ? 1 : 0;
    for (int i = 0; i < count(); ++i)
        if (m_data.experts[size_t(i)].topic == topic) markChanged(i);
    if (m_selected >= 0 && !visible(m_selected)) select(-1);
    emit legendChanged();
    if (!m_manual && m_active) tick(); // at once: a toggle is a single change
}

void AtlasModel::select(int index) {
    if (index < -1 || index >= count()) index = -1;
    if (index == m_selected) return;
    if (m_selected >= 0) markChanged(m_selected);
    m_selected = index;
    if (m_selected >= 0) markChanged(m_selected);
    emit selectionChanged();
    if (!m_manual) tick();
}

QVariantMap AtlasModel::details() const {
    if (m_selected < 0) return {};
    const auto& e = m_data.experts[size_t(m_selected)];
    QVariantList shares;
    std::vector<int> order(e.shares.size());
    for (size_t t = 0; t < order.size(); ++t)
        order[t] = int(t);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return e.shares[size_t(a)] != e.shares[size_t(b)]
                   ? e.shares[size_t(a)] > e.shares[size_t(b)]
                   : a < b;
    });
    for (size_t j = 0; j < std::min<size_t>(3, order.size()); ++j)
        shares.append(QVariantMap{
            {QStringLiteral("name"), QString::fromStdString(m_data.topics[size_t(order[j])])},
            {QStringLiteral("share"), double(e.shares[size_t(order[j])])},
            {QStringLiteral("color"), topicColor(order[j])}});
    return {{QStringLiteral("layer"), e.layer},
            {QStringLiteral("expert"), e.expert},
            {QStringLiteral("topic"),
             e.topic < 0 ? tr("none") : QString::fromStdString(m_data.topics[size_t(e.topic)])},
            {QStringLiteral("color"), topicColor(e.topic)},
            {QStringLiteral("specialist"), e.specialist},
            {QStringLiteral("kind"), e.specialist ? tr("specialist") : tr("generalist")},
            {QStringLiteral("shares"), shares},
            {QStringLiteral("hits"), double(m_hits[size_t(m_selected)])},
            {QStringLiteral("state"),
             m_haveMap ? stateName(m_state[size_t(m_selected)]) : tr("no model running")}};
}

int AtlasModel::indexOf(int layer, int expert) const {
    // Probe files and the synthetic atlas list experts layer by layer; fall back to a scan.
    const long guess = long(layer) * m_data.nExperts + expert;
    if (guess >= 0 && guess < count()) {
        const auto& e = m_data.experts[size_t(guess)];
        if (e.layer == layer && e.expert == expert) return int(guess);
    }
    for (int i = 0; i < count(); ++i)
        if (m_data.experts[size_t(i)].layer == layer && m_data.experts[size_t(i)].expert == expert)
            return i;
    return -1;
}

bool AtlasModel::findExpert(int layer, int expert) {
    const int i = indexOf(layer, expert);
    if (i < 0 || !visible(i)) return false;
    select(i);
    const auto& e = m_data.experts[size_t(i)];
    m_target = QVector3D(e.x, e.y, e.z);
    m_distance = std::min(m_distance, m_radius * 1.2);
    emit cameraChanged();
    return true;
}

// ---- camera and picking ----

void AtlasModel::resetCamera() {
    m_target = m_centre;
    // The cloud's sphere (98th percentile distance) just fits the vertical field of view: a few
    // outer points may leave the frame, the rest is not shrunk for them.
    m_distance = m_radius / std::sin(qDegreesToRadians(fieldOfView() / 2));
    emit cameraChanged();
}

void AtlasModel::setCameraAngles(double yawDeg, double pitchDeg) {
    m_yaw = std::fmod(yawDeg, 360.0);
    m_pitch = std::clamp(pitchDeg, -89.0, 89.0);
    emit cameraChanged();
}

void AtlasModel::orbit(double dx, double dy) {
    setCameraAngles(m_yaw - 0.3 * dx, m_pitch - 0.3 * dy);
}

void AtlasModel::zoom(double steps) {
    m_distance = std::clamp(m_distance * std::pow(0.9, steps), m_radius * 0.05, m_radius * 12);
    emit cameraChanged();
}

void AtlasModel::pan(double dx, double dy, double w, double h) {
    Q_UNUSED(w);
    if (h <= 0) return;
    // Scene units per pixel at the target's depth.
    const double perPx = 2 * m_distance * std::tan(qDegreesToRadians(fieldOfView() / 2)) / h;
    const QQuaternion q = cameraRotation();
    m_target += q.rotatedVector(QVector3D(-1, 0, 0)) * float(dx * perPx) +
                q.rotatedVector(QVector3D(0, 1, 0)) * float(dy * perPx);
    emit cameraChanged();
}

QQuaternion AtlasModel::cameraRotation() const {
    return QQuaternion::fromEulerAngles(float(m_pitch), float(m_yaw), 0);
}

QVector3D AtlasModel::cameraPosition() const {
    return m_target - cameraRotation().rotatedVector(QVector3D(0, 0, -1)) * float(m_distance);
}

QMatrix4x4 AtlasModel::viewProjection(double w, double h) const {
    QMatrix4x4 proj, view;
    proj.perspective(float(fieldOfView()), float(w / std::max(1.0, h)), float(clipNear()),
                     float(clipFar()));
    view.lookAt(cameraPosition(), m_target, cameraRotation().rotatedVector(QVector3D(0, 1, 0)));
    return proj * view;
}

QPointF AtlasModel::projectPoint(int index, double w, double h) const {
    if (index < 0 || index >= count()) return {-1, -1};
    const auto& e = m_data.experts[size_t(index)];
    const QMatrix4x4 vp = viewProjection(w, h);
    const auto p = viz::project({e.x, e.y, e.z}, std::span<const float, 16>(vp.constData(), 16),
                                {0, 0, float(w), float(h)});
    if (!p) return {-1, -1};
    return {p->x, p->y};
}

int AtlasModel::pick(double x, double y, double w, double h) const {
    // viz::pickNearest over the points with a mask of the visible topics.
    std::vector<viz::Vec3f> points(static_cast<size_t>(count()));
    std::vector<uint8_t> mask(static_cast<size_t>(count()));
    for (int i = 0; i < count(); ++i) {
        const auto& e = m_data.experts[size_t(i)];
        points[size_t(i)] = {e.x, e.y, e.z};
        mask[size_t(i)] = visible(i) ? 1 : 0;
    }
    const QMatrix4x4 vp = viewProjection(w, h);
    const auto hit =
        viz::pickNearest(points, mask, std::span<const float, 16>(vp.constData(), 16),
                         {0, 0, float(w), float(h)}, float(x), float(y), float(kPickRadiusPx));
    return hit ? *hit : -1;
}

int AtlasModel::selectAt(double x, double y, double w, double h) {
    const int i = pick(x, y, w, h);
    select(i);
    return i;
}

} // namespace coli::app
