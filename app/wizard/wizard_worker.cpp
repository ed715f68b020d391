#include "wizard/wizard_worker.h"

namespace coli::app::wizard {

WizardWorker::WizardWorker() : m_thread([this] { run(); }) {}

WizardWorker::~WizardWorker() {
    shutdown();
}

WizardWorker::Cancel WizardWorker::post(Job job) {
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping) {
            cancel->store(true);
            return cancel;
        }
        m_queue.push_back({std::move(job), cancel});
    }
    m_cv.notify_one();
    return cancel;
}

void WizardWorker::cancelAll() {
    std::lock_guard lock(m_mutex);
    if (m_running) m_running->store(true);
    for (auto& i : m_queue)
        i.cancel->store(true);
}

void WizardWorker::shutdown() {
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping && !m_thread.joinable()) return;
        m_stopping = true;
        if (m_running) m_running->store(true);
        for (auto& i : m_queue)
            i.cancel->store(true);
        m_queue.clear();
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
}

void WizardWorker::run() {
    for (;;) {
        Item item;
        {
            std::unique_lock lock(m_mutex);
            m_cv.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
            if (m_stopping) return;
            item = std::move(m_queue.front());
            m_queue.pop_front();
            m_running = item.cancel;
        }
        item.job(*item.cancel);
        std::lock_guard lock(m_mutex);
        m_running.reset();
    }
}

} // namespace coli::app::wizard
