#include "storage/atlas_store.h"

#include "storage/sqlite_util.h"

#include <cmath>
#include <set>
#include <tuple>

namespace coli::storage {

using detail::expertText;
using detail::nowMs;
using detail::sqliteStatus;
using detail::Stmt;
using detail::Transaction;

namespace {

// "" when the probe's rows fit together, else what is wrong.
std::string checkProbe(const AtlasProbe& p) {
    if (p.topics.empty()) return "the probe has no topics";
    if (p.nLayers < 1 || p.nExperts < 1 || p.topK < 1)
        return "layers, experts per layer and top-k must be at least 1 (got " +
               std::to_string(p.nLayers) + ", " + std::to_string(p.nExperts) + ", " +
               std::to_string(p.topK) + ")";
    const int nTopics = int(p.topics.size());
    for (size_t i = 0; i < p.topics.size(); ++i)
        if (p.topics[i].prompts < 0 || p.topics[i].tokens < 0)
            return "topic " + std::to_string(i) + " has a negative prompt or token count";
    auto inModel = [&](int layer, int expert) {
        return layer >= 0 && layer < p.nLayers && expert >= 0 && expert < p.nExperts;
    };
    std::set<std::tuple<int, int, int>> counts;
    for (const AtlasCount& c : p.counts) {
        if (!inModel(c.layer, c.expert))
            return "count of " + expertText(c.layer, c.expert) + " is outside the model";
        if (c.topic < 0 || c.topic >= nTopics)
            return "count of " + expertText(c.layer, c.expert) + " names topic " +
                   std::to_string(c.topic) + " of " + std::to_string(nTopics);
        if (c.routedSlots < 0) return "count of " + expertText(c.layer, c.expert) + " is negative";
        if (!counts.insert({c.layer, c.expert, c.topic}).second)
            return "count of " + expertText(c.layer, c.expert) + " in topic " +
                   std::to_string(c.topic) + " given twice";
    }
    std::set<std::tuple<int, int, int, int>> pairs;
    for (const AtlasPair& q : p.coactivation) {
        const std::string name = "pair (" + expertText(q.layerA, q.expertA) + ", " +
                                 expertText(q.layerB, q.expertB) + ")";
        if (!inModel(q.layerA, q.expertA) || !inModel(q.layerB, q.expertB))
            return name + " is outside the model";
        if (!(std::tie(q.layerA, q.expertA) < std::tie(q.layerB, q.expertB)))
            return name + " is not in (layer, expert) order";
        if (q.count < 1) return name + " has a count below 1";
        if (!pairs.insert({q.layerA, q.expertA, q.layerB, q.expertB}).second)
            return name + " given twice";
    }
    std::set<std::pair<int, int>> placed;
    for (const AtlasPosition& x : p.positions) {
        const std::string name = "position of " + expertText(x.layer, x.expert);
        if (!inModel(x.layer, x.expert)) return name + " is outside the model";
        if (!std::isfinite(x.x) || !std::isfinite(x.y) || !std::isfinite(x.z))
            return name + " is not finite";
        if (x.dominantTopic && (*x.dominantTopic < 0 || *x.dominantTopic >= nTopics))
            return name + " names dominant topic " + std::to_string(*x.dominantTopic) + " of " +
                   std::to_string(nTopics);
        if (!placed.insert({x.layer, x.expert}).second) return name + " given twice";
    }
    return "";
}

Status step(sqlite3* db, Stmt& s, const std::string& file, const std::string& what) {
    const int rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);
    s.reset();
    return {};
}

} // namespace

Result<int64_t> AtlasStore::saveProbe(int64_t model, const AtlasProbe& p) {
    sqlite3* db = m_db.m_db;
    const std::string& file = m_db.m_path;
    const std::string what = "saving a topic probe";
    if (std::string bad = checkProbe(p); !bad.empty())
        return Result<int64_t>(ErrorCode::InvalidArgument, file + ": " + what + ": " + bad);
    Transaction tx(db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(m_db.requireModel(model, what));
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(db,
                                   "INSERT INTO atlas_probes(model, topic_set, topic_set_sha256, "
                                   "created, n_layers, n_experts, top_k) VALUES(?, ?, ?, ?, ?, ?, "
                                   "?) RETURNING id",
                                   file));
    s.bind(1, model);
    s.bind(2, p.topicSet);
    s.bind(3, p.topicSetSha256);
    s.bind(4, p.createdMs != 0 ? p.createdMs : nowMs());
    s.bind(5, int64_t(p.nLayers));
    s.bind(6, int64_t(p.nExperts));
    s.bind(7, int64_t(p.topK));
    int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(db, rc, file, what);
    const int64_t id = s.int64(0);
    rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);

    Stmt t;
    COLI_RETURN_IF_ERROR(t.prepare(db,
                                   "INSERT INTO atlas_topics(probe, topic, name, label, prompts, "
                                   "tokens) VALUES(?, ?, ?, ?, ?, ?)",
                                   file));
    for (size_t i = 0; i < p.topics.size(); ++i) {
        t.bind(1, id);
        t.bind(2, int64_t(i));
        t.bind(3, p.topics[i].name);
        t.bind(4, p.topics[i].label);
        t.bind(5, int64_t(p.topics[i].prompts));
        t.bind(6, p.topics[i].tokens);
        COLI_RETURN_IF_ERROR(step(db, t, file, what));
    }
    Stmt c;
    COLI_RETURN_IF_ERROR(c.prepare(
        db, "INSERT INTO atlas_counts(probe, layer, expert, topic, slots) VALUES(?, ?, ?, ?, ?)",
        file));
    for (const AtlasCount& x : p.counts) {
        c.bind(1, id);
        c.bind(2, int64_t(x.layer));
        c.bind(3, int64_t(x.expert));
        c.bind(4, int64_t(x.topic));
        c.bind(5, x.routedSlots);
        COLI_RETURN_IF_ERROR(step(db, c, file, what));
    }
    Stmt q;
    COLI_RETURN_IF_ERROR(q.prepare(db,
                                   "INSERT INTO atlas_coactivation(probe, layer_a, expert_a, "
                                   "layer_b, expert_b, count) VALUES(?, ?, ?, ?, ?, ?)",
                                   file));
    for (const AtlasPair& x : p.coactivation) {
        q.bind(1, id);
        q.bind(2, int64_t(x.layerA));
        q.bind(3, int64_t(x.expertA));
        q.bind(4, int64_t(x.layerB));
        q.bind(5, int64_t(x.expertB));
        q.bind(6, x.count);
        COLI_RETURN_IF_ERROR(step(db, q, file, what));
    }
    Stmt pos;
    COLI_RETURN_IF_ERROR(pos.prepare(db,
                                     "INSERT INTO atlas_positions(probe, layer, expert, x, y, z, "
                                     "dominant_topic, specialist) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                                     file));
    for (const AtlasPosition& x : p.positions) {
        pos.bind(1, id);
        pos.bind(2, int64_t(x.layer));
        pos.bind(3, int64_t(x.expert));
        pos.bind(4, x.x);
        pos.bind(5, x.y);
        pos.bind(6, x.z);
        if (x.dominantTopic)
            pos.bind(7, int64_t(*x.dominantTopic));
        else
            pos.bindNull(7);
        pos.bind(8, int64_t(x.specialist ? 1 : 0));
        COLI_RETURN_IF_ERROR(step(db, pos, file, what));
    }
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return id;
}

Result<int64_t> AtlasStore::probeCount(int64_t model) {
    sqlite3* db = m_db.m_db;
    const std::string& file = m_db.m_path;
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(db, "SELECT count(*) FROM atlas_probes WHERE model = ?", file));
    s.bind(1, model);
    const int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(db, rc, file, "counting topic probes");
    return s.int64(0);
}

Result<std::optional<AtlasProbe>> AtlasStore::newestProbe(int64_t model) {
    sqlite3* db = m_db.m_db;
    const std::string& file = m_db.m_path;
    const std::string what = "reading the newest topic probe";
    // One read transaction: the rows of one probe are read from one snapshot.
    COLI_RETURN_IF_ERROR(detail::exec(db, "BEGIN", file, what));
    struct End {
        sqlite3* db;
        ~End() { sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); }
    } end{db};
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(db,
                                   "SELECT id, topic_set, topic_set_sha256, created, n_layers, "
                                   "n_experts, top_k FROM atlas_probes WHERE model = ? ORDER BY "
                                   "created DESC, id DESC LIMIT 1",
                                   file));
    s.bind(1, model);
    int rc = s.step();
    if (rc == SQLITE_DONE) return std::optional<AtlasProbe>();
    if (rc != SQLITE_ROW) return sqliteStatus(db, rc, file, what);
    AtlasProbe p;
    p.id = s.int64(0);
    p.topicSet = s.text(1);
    p.topicSetSha256 = s.text(2);
    p.createdMs = s.int64(3);
    p.nLayers = int(s.int64(4));
    p.nExperts = int(s.int64(5));
    p.topK = int(s.int64(6));

    Stmt t;
    COLI_RETURN_IF_ERROR(t.prepare(db,
                                   "SELECT topic, name, label, prompts, tokens FROM atlas_topics "
                                   "WHERE probe = ? ORDER BY topic",
                                   file));
    t.bind(1, p.id);
    while ((rc = t.step()) == SQLITE_ROW) {
        if (t.int64(0) != int64_t(p.topics.size()))
            return Status(ErrorCode::Malformed, file + ": " + what + ": probe " +
                                                    std::to_string(p.id) +
                                                    " has a gap in its topic numbers");
        p.topics.push_back({t.text(1), t.text(2), int(t.int64(3)), t.int64(4)});
    }
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);

    Stmt c;
    COLI_RETURN_IF_ERROR(c.prepare(db,
                                   "SELECT layer, expert, topic, slots FROM atlas_counts WHERE "
                                   "probe = ? ORDER BY layer, expert, topic",
                                   file));
    c.bind(1, p.id);
    while ((rc = c.step()) == SQLITE_ROW)
        p.counts.push_back({int(c.int64(0)), int(c.int64(1)), int(c.int64(2)), c.int64(3)});
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);

    Stmt q;
    COLI_RETURN_IF_ERROR(q.prepare(db,
                                   "SELECT layer_a, expert_a, layer_b, expert_b, count FROM "
                                   "atlas_coactivation WHERE probe = ? ORDER BY layer_a, "
                                   "expert_a, layer_b, expert_b",
                                   file));
    q.bind(1, p.id);
    while ((rc = q.step()) == SQLITE_ROW)
        p.coactivation.push_back(
            {int(q.int64(0)), int(q.int64(1)), int(q.int64(2)), int(q.int64(3)), q.int64(4)});
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);

    Stmt x;
    COLI_RETURN_IF_ERROR(x.prepare(db,
                                   "SELECT layer, expert, x, y, z, dominant_topic, specialist "
                                   "FROM atlas_positions WHERE probe = ? ORDER BY layer, expert",
                                   file));
    x.bind(1, p.id);
    while ((rc = x.step()) == SQLITE_ROW) {
        AtlasPosition a;
        a.layer = int(x.int64(0));
        a.expert = int(x.int64(1));
        a.x = x.real(2);
        a.y = x.real(3);
        a.z = x.real(4);
        if (!x.isNull(5)) a.dominantTopic = int(x.int64(5));
        a.specialist = x.int64(6) != 0;
        p.positions.push_back(a);
    }
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);
    if (std::string bad = checkProbe(p); !bad.empty())
        return Status(ErrorCode::Malformed,
                      file + ": " + what + ": probe " + std::to_string(p.id) + ": " + bad);
    return std::optional<AtlasProbe>(std::move(p));
}

} // namespace coli::storage
