#pragma once
// Persistent chat sessions (docs/app.md "Sessions"): the glue between the conversation on screen
// (EngineController + ChatModel) and the storage thread (StorageWorker, schema v2 of
// docs/storage.md). GUI thread only; every database access is a job on the storage thread, and
// results come back as values (threading contract rule 6).
//
// What is saved when: a user message when it is sent; an answer row when it starts (empty), its
// text so far at most every `streamSaveInterval` while it streams, and its final text, stop reason
// and run (turn statistics) when it ends or is stopped. So a killed app loses at most the last
// seconds of one answer. shutdown() saves the answer being written as stopped and waits for the
// queued writes.
// A session is created at its first message (title: that message's first line, shortened); the
// list restores at start with the last session shown. A session held with another model than
// the loaded one says so (modelNotice) and offers to load it (loadSessionModel).
// Storage problems (a damaged, read-only or newer database) set `storageProblem` (one banner);
// the app keeps working without saving.
// Each chat's KV cache persists too, in <database folder>/kv/session-<id>.kv, written and read by
// the engine thread (EngineWorker): this glue names the chat and where its file is for every
// turn, binds a new chat's provisional key to its database id, deletes the file with the chat,
// and keeps each chat's KV size on disk in the list (kvBytes, kvSize) and currentKvText.
#include "engine_controller.h"
#include "session_list_model.h"
#include "storage_worker.h"

#include <QObject>
#include <QString>
#include <QTimer>
#include <QUrl>
#include <QVector>

#include <memory>

namespace coli::app {

class SessionManager : public QObject {
    Q_OBJECT
    Q_PROPERTY(QObject* sessions READ sessionsObject CONSTANT)
    Q_PROPERTY(qint64 currentSessionId READ currentSessionId NOTIFY currentSessionChanged)
    Q_PROPERTY(QString currentTitle READ currentTitle NOTIFY currentSessionChanged)
    Q_PROPERTY(QString storageProblem READ storageProblem NOTIFY storageProblemChanged)
    Q_PROPERTY(QString modelNotice READ modelNotice NOTIFY modelNoticeChanged)
    Q_PROPERTY(bool canLoadSessionModel READ canLoadSessionModel NOTIFY modelNoticeChanged)
    Q_PROPERTY(QString searchText READ searchText WRITE setSearchText NOTIFY searchTextChanged)
    Q_PROPERTY(QString databasePath READ databasePath CONSTANT)
    // The chat's own settings (the side panel): systemPrompt, and the values it sets over the
    // app's: temperature, topK, topP, minP, repeatPenalty, maxNewTokens, seed (a fixed seed as a
    // decimal string). Absent keys: the app's value.
    Q_PROPERTY(QVariantMap chatSettings READ chatSettings NOTIFY chatSettingsChanged)
    // The loaded model's usage is being learned (its database row is known; turn ends save).
    Q_PROPERTY(bool learning READ learning NOTIFY learningChanged)
    // The chat shown's KV cache on disk, "KV cache 1.2 MiB on disk"; "" when it has none.
    Q_PROPERTY(QString currentKvText READ currentKvText NOTIFY currentKvChanged)
public:
    SessionManager(EngineController* controller, StorageWorkerOptions options,
                   QObject* parent = nullptr);
    ~SessionManager() override;

    SessionListModel* sessions() { return &m_list; }
    QObject* sessionsObject() { return &m_list; }
    qint64 currentSessionId() const { return m_current; }
    QString currentTitle() const;
    QString storageProblem() const { return m_problem; }
    QString modelNotice() const { return m_modelNotice; }
    bool canLoadSessionModel() const { return !m_sessionModelDir.isEmpty(); }
    QString searchText() const { return m_search; }
    void setSearchText(const QString& text);
    QString databasePath() const { return QString::fromStdString(m_path); }
    // The folder of the chats' KV files: sessionKvDir(databasePath()).
    QString kvDir() const { return QString::fromStdString(m_kvDir); }
    QString currentKvText() const;
    // The most all KV files together may take (0: defaultSessionKvCap, 10 % of the disk, at most
    // 20 GiB); tests lower it.
    void setKvCapBytes(uint64_t bytes) { m_kvCap = bytes; }

    Q_INVOKABLE void newSession();
    Q_INVOKABLE void openSession(qint64 id);
    Q_INVOKABLE void renameSession(qint64 id, const QString& title);
    Q_INVOKABLE void deleteSession(qint64 id);
    // Writes the session to `file` as "markdown" or "json" (storage/session_export.h); the result
    // arrives as exported(path, error).
    Q_INVOKABLE void exportSession(qint64 id, const QUrl& file, const QString& format);
    // Where the export dialog starts: the user's documents folder when it exists, else the home
    // folder (a fresh account may have no Documents; the dialog showed it as an empty folder and
    // the export then failed). Thread-safety: GUI thread (QStandardPaths).
    Q_INVOKABLE QUrl exportFolder() const;
    // A file name for the chat `title` with the extension of `format` ("markdown" or "json"): the
    // title without the characters file systems refuse or shells trip on (/ \ : * ? " < > | and
    // control characters), spaces collapsed, letters of every script kept; "chat" when nothing
    // is left. Pure (a member for QML).
    Q_INVOKABLE QString exportFileName(const QString& title, const QString& format) const;
    // exportFolder()/exportFileName(title, format) as a file URL (a '#' or '%' in a title stays
    // part of the name, not of the URL's syntax).
    Q_INVOKABLE QUrl exportFile(const QString& title, const QString& format) const;
    Q_INVOKABLE void loadSessionModel();
    Q_INVOKABLE void dismissStorageProblem();
    QVariantMap chatSettings() const;
    bool learning() const { return m_learnedModel != 0; }
    // Applies to the next answers and is saved with the chat (at once, or with its creation).
    Q_INVOKABLE void setChatSettings(const QVariantMap& settings);
    // Deletes the learned heat and pins of the model in `modelDir` on the storage thread
    // (AppSettings::forgetUsageIn); `done(message)` runs on the GUI thread. When it is the loaded
    // model, this load stops saving its usage (the next load starts from nothing).
    void forgetUsage(const QString& modelDir, std::function<void(const QString&)> done);

    // Saves the answer being written (as stopped), waits for the queued writes and closes the
    // database. Returns the number of writes lost (0 unless the database stayed locked).
    size_t shutdown();
    // Sets the interval of the streaming saves (default 2 s); tests shorten it.
    void setStreamSaveInterval(int ms) { m_streamSave.setInterval(ms); }
    StorageWorker* worker() { return m_worker.get(); }

    static QString titleFrom(const QString& firstMessage);

signals:
    void currentSessionChanged();
    void storageProblemChanged();
    void modelNoticeChanged();
    void searchTextChanged();
    void exported(const QString& path, const QString& error);
    void sessionOpened(qint64 id); // its messages are on screen
    void listLoaded();
    void chatSettingsChanged();
    void learningChanged();
    void currentKvChanged();
    // The turn statistics of the conversation shown (for TurnStatsModel, the Charts view), as
    // values on the GUI thread. runsLoaded: every run of the session just opened, in the order
    // they were added (read from the database with its messages, just before sessionOpened).
    // runAdded: the run of an answer of the conversation shown that just ended with statistics
    // (finished or stopped; a failed answer has none), as it is being saved (id, session and
    // createdMs are 0 here). conversationCleared: New chat, another model or the shown session
    // deleted: the conversation shown has no runs yet.
    void runsLoaded(const QVector<coli::storage::RunRecord>& runs);
    void runAdded(const coli::storage::RunRecord& run);
    void conversationCleared();

private:
    void onStorageEvent(StorageEvent ev); // storage thread: posts to the GUI thread
    void onUserMessage(int row);
    void onAnswerStarted(int row);
    void appendRow(int row, storage::MessageRecord rec, const char* what);
    void onAnswerEnded(int row, const GenerateStats* stats);
    void onCleared();
    void onAnswerResumed(int row);
    void onTruncating(int row);
    struct ChatSettings {
        QString systemPrompt;
        storage::SamplingSettings sampling;
        std::optional<uint64_t> seed;
    };
    void applyChatSettings(const ChatSettings& c);
    ChatSettings m_settings;
    void finishStreamingAsStopped();
    // Saves the answer at `row` as ended: its text as shown, why it stopped, its run (if any).
    void postFinish(int row, storage::StopReason stop, std::optional<storage::RunRecord> run);
    void saveStreamingText();
    void ensureSession(const QString& firstText);
    void refreshList();
    void showList(quint64 edits, const QVector<SessionListModel::Row>& rows);
    void showSearch(quint64 serial, quint64 edits, const QVector<SessionListModel::Row>& rows);
    void updateModelNotice();
    void recordSessionModel();
    void setProblem(const QString& text);
    void onModelReady();
    void saveUsage(std::shared_ptr<const learning::UsageSnapshot> snapshot);
    void saveUserPin(const UserPinChange& c); // on the storage thread, when learning
    qint64 realId(qint64 key) const;
    SessionKvTarget kvTarget(qint64 session) const; // where that chat's KV cache persists

    EngineController* m_controller;
    SessionListModel m_list;
    std::string m_path;
    std::string m_kvDir; // sessionKvDir(m_path)
    uint64_t m_kvCap = 0;
    qint64 m_current = 0;      // 0: a new chat not saved yet
    QVector<qint64> m_rowKeys; // message key of each ChatModel row
    int m_streamRow = -1;      // the answer being written
    QString m_savedText;       // its text as last saved
    QTimer m_streamSave;
    QString m_problem, m_modelNotice, m_search, m_sessionModelDir;
    QString m_modelIdentity, m_modelDir; // of the loaded model
    QString m_sessionIdentity;           // of the session shown
    int64_t m_learnedModel = 0;          // database id of the loaded model (0: not learning)
    QHash<qint64, qint64> m_rekeyed;     // provisional key -> database id
    quint64 m_searchSerial = 0;
    // Local list changes (a chat created, renamed, deleted, moved up): a listing read before the
    // latest of them is stale and is read again instead of shown (jobs run in order, so the
    // next one sees those changes).
    quint64 m_listEdits = 0;
    void touchList() { ++m_listEdits; }
    std::unique_ptr<StorageWorker> m_worker; // last: its thread stops before the rest dies
};

} // namespace coli::app
