#include "hub_token.h"

#include <qt6keychain/keychain.h>

#include <cstdlib>

namespace coli::app {

namespace {
// Errors that mean "no usable keychain service here", as opposed to "no token stored".
bool serviceMissing(QKeychain::Error e) {
    return e != QKeychain::NoError && e != QKeychain::EntryNotFound;
}

QString reasonOf(const QKeychain::Job& job) {
    const QString why = job.errorString().trimmed();
    return why.isEmpty() ? QStringLiteral("no keychain service answered") : why;
}

// Jobs have no parent: one still unanswered when this object goes away deletes itself when its
// answer comes (its connections to this object are gone by then).
template <class Job> Job* makeJob(const QString& service) {
    auto* job = new Job(service);
    job->setKey(QString::fromLatin1(HubToken::kKeychainKey));
    // Never fall back to a plain-text QSettings entry: the token must not land in a file.
    job->setInsecureFallback(false);
    job->setAutoDelete(true);
    return job;
}
} // namespace

HubToken::HubToken(QString service, QObject* parent) : QObject(parent), m_service(service) {
    readEnvironment();
    update();
    startRead();
}

HubToken::~HubToken() = default;

void HubToken::readEnvironment() {
    m_envToken.clear();
    m_envSource.clear();
    auto e = hub::endpointFromEnvironment();
    // A refused HF_ENDPOINT is reported where the endpoint is used; the token does not depend on
    // it, so read the token the same way the library does.
    if (e) {
        m_envToken = e->token;
        m_envSource = QString::fromStdString(e->tokenSource);
    } else if (const char* t = std::getenv("HF_TOKEN"); t && *t) {
        m_envToken = QString::fromUtf8(t).trimmed().toStdString();
        m_envSource = QStringLiteral("HF_TOKEN");
    }
}

Result<hub::HubEndpoint> HubToken::endpoint() const {
    auto e = hub::endpointFromEnvironment();
    if (!e) return e.status();
    hub::HubEndpoint out = e.value();
    out.token = m_effective;
    out.tokenSource = m_source.toStdString();
    return out;
}

void HubToken::startRead() {
    auto* job = makeJob<QKeychain::ReadPasswordJob>(m_service);
    ++m_pending;
    connect(job, &QKeychain::Job::finished, this, [this, job] {
        --m_pending;
        if (job->error() == QKeychain::NoError) {
            m_keychainState = QStringLiteral("available");
            m_keychainToken = job->textData().trimmed().toStdString();
        } else if (job->error() == QKeychain::EntryNotFound) {
            m_keychainState = QStringLiteral("available");
            m_keychainToken.clear();
        } else {
            m_keychainState = QStringLiteral("unavailable");
            m_keychainError = reasonOf(*job);
            m_keychainToken.clear();
        }
        update();
        emit keychainChecked();
    });
    job->start();
}

void HubToken::refresh() {
    readEnvironment();
    m_keychainState = QStringLiteral("checking");
    update();
    startRead();
}

void HubToken::setToken(const QString& typed) {
    const std::string token = typed.trimmed().toStdString();
    if (token.empty()) {
        forget();
        return;
    }
    // Used at once whatever the keychain answers; kept for this run until it is saved.
    m_runToken = token;
    update();
    auto* job = makeJob<QKeychain::WritePasswordJob>(m_service);
    job->setTextData(QString::fromStdString(token));
    ++m_pending;
    connect(job, &QKeychain::Job::finished, this, [this, job, token] {
        --m_pending;
        const bool ok = job->error() == QKeychain::NoError;
        if (ok) {
            m_keychainState = QStringLiteral("available");
            m_keychainToken = token;
            if (m_runToken == token) m_runToken.clear();
        } else if (serviceMissing(job->error())) {
            m_keychainState = QStringLiteral("unavailable");
            m_keychainError = reasonOf(*job);
        }
        update();
        emit savedToKeychain(ok);
    });
    job->start();
}

void HubToken::forget() {
    m_runToken.clear();
    m_keychainToken.clear();
    update();
    auto* job = makeJob<QKeychain::DeletePasswordJob>(m_service);
    ++m_pending;
    connect(job, &QKeychain::Job::finished, this, [this, job] {
        --m_pending;
        const bool ok = job->error() == QKeychain::NoError ||
                        job->error() == QKeychain::EntryNotFound ||
                        m_keychainState == QStringLiteral("unavailable");
        update();
        emit forgotten(ok);
    });
    job->start();
}

void HubToken::update() {
    m_fromEnvironment = !m_envToken.empty();
    if (m_fromEnvironment) {
        m_effective = m_envToken;
        m_source = m_envSource;
        m_status =
            m_envSource == QStringLiteral("HF_TOKEN")
                ? tr("The token comes from the HF_TOKEN environment variable.")
                : tr("The token comes from %1 (as huggingface_hub stores it).").arg(m_envSource);
    } else if (!m_runToken.empty()) {
        m_effective = m_runToken;
        m_source = QStringLiteral("this run only");
        m_status = m_keychainState == QStringLiteral("unavailable")
                       ? tr("No keychain service is running (%1): the token is used for this "
                            "run only and cannot be saved.")
                             .arg(m_keychainError)
                       : tr("Saving the token in the keychain…");
    } else if (!m_keychainToken.empty()) {
        m_effective = m_keychainToken;
        m_source = QStringLiteral("keychain");
        m_status = tr("The token is saved in the keychain.");
    } else {
        m_effective.clear();
        m_source.clear();
        if (m_keychainState == QStringLiteral("unavailable"))
            m_status = tr("No token. No keychain service is running (%1): a token typed here is "
                          "used for this run only.")
                           .arg(m_keychainError);
        else if (m_keychainState == QStringLiteral("checking"))
            m_status = tr("Looking for a saved token in the keychain…");
        else
            m_status = tr("No token: public repos only. A token typed here is saved in the "
                          "keychain.");
    }
    emit changed();
}

} // namespace coli::app
