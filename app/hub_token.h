#pragma once
// The Hugging Face Hub token in the app (docs/app.md "The model wizard"). Precedence, as
// huggingface_hub and `coli download` have it, then the app's own store:
//   1. $HF_TOKEN;
//   2. the token file $HF_HOME/token (default ~/.cache/huggingface/token);
//   3. the OS keychain (qtkeychain: the Secret Service on Linux, e.g. gnome-keyring), under
//      service `service()` and key kKeychainKey;
//   4. a token typed in the wizard while no keychain service runs: used for this run only.
// A token typed while a keychain runs is saved there and used at once. The token is never
// written to QSettings (qtkeychain's insecure fallback is off), never logged and never put in a
// property that QML could print: QML sees only whether there is one and where it came from.
//
// Keychain calls are asynchronous (qtkeychain jobs answered through the GUI thread's event loop),
// so nothing here blocks the GUI thread. `keychainState` is "checking" until the first read has
// answered, then "available" (a service answered, with or without a stored token) or
// "unavailable" (no service: NoBackendAvailable, no session bus, a locked keyring that cannot
// prompt, ...; `status` says the typed token is used for this run only).
//
// Thread-safety: GUI thread only (QObject affinity); token() may be copied to a worker thread as a
// value before a job starts.
#include "hub/hub_endpoint.h"

#include <QObject>
#include <QString>

#include <string>

namespace coli::app {

class HubToken : public QObject {
    Q_OBJECT
    // true when a token will be sent (from any of the four places).
    Q_PROPERTY(bool hasToken READ hasToken NOTIFY changed)
    // "HF_TOKEN", the token file's path, "keychain", "this run only", or "" (none).
    Q_PROPERTY(QString source READ source NOTIFY changed)
    // true when the environment (1 or 2) decides: a typed token would not be used.
    Q_PROPERTY(bool fromEnvironment READ fromEnvironment NOTIFY changed)
    Q_PROPERTY(QString keychainState READ keychainState NOTIFY changed)
    // One sentence for the wizard: where the token comes from, or why it cannot be saved.
    Q_PROPERTY(QString status READ status NOTIFY changed)
    // A keychain write or delete is in flight.
    Q_PROPERTY(bool busy READ busy NOTIFY changed)
public:
    static constexpr const char* kKeychainKey = "huggingface-token";
    static QString defaultService() { return QStringLiteral("Colibri Desktop"); }

    // Reads the environment at once and starts the keychain read (answered later: changed()).
    explicit HubToken(QString service = defaultService(), QObject* parent = nullptr);
    ~HubToken() override;

    bool hasToken() const { return !m_effective.empty(); }
    QString source() const { return m_source; }
    bool fromEnvironment() const { return m_fromEnvironment; }
    QString keychainState() const { return m_keychainState; }
    QString status() const { return m_status; }
    bool busy() const { return m_pending > 0; }
    QString service() const { return m_service; }

    // The token to send (empty: anonymous). Never print it.
    std::string token() const { return m_effective; }
    // The Hub endpoint of the environment ($HF_ENDPOINT) with this token. Errors: those of
    // hub::endpointFromEnvironment (an HF_ENDPOINT the URL policy refuses).
    Result<hub::HubEndpoint> endpoint() const;

    // A token typed by the user (trimmed; empty = forget()). Used at once; saved in the keychain
    // when one runs (savedToKeychain(true) when written, else false with the reason in status).
    Q_INVOKABLE void setToken(const QString& token);
    // Removes the saved token from the keychain and the typed one; the environment's stays.
    Q_INVOKABLE void forget();
    // Reads the environment and the keychain again.
    Q_INVOKABLE void refresh();

signals:
    void changed();
    // A keychain read answered (keychainState is no longer "checking").
    void keychainChecked();
    // A write ended: ok = stored in the keychain; else the token is used for this run only.
    void savedToKeychain(bool ok);
    // A delete ended (ok also when there was nothing to delete).
    void forgotten(bool ok);

private:
    void readEnvironment();
    void startRead();
    void update();

    QString m_service;
    std::string m_envToken;      // HF_TOKEN or the token file
    QString m_envSource;         // "HF_TOKEN" or the file's path
    std::string m_keychainToken; // read from or written to the keychain
    std::string m_runToken;      // typed while no keychain could take it
    std::string m_effective;
    QString m_source, m_status;
    QString m_keychainState = QStringLiteral("checking");
    QString m_keychainError; // why it is unavailable, in words
    bool m_fromEnvironment = false;
    int m_pending = 0;
};

} // namespace coli::app
