#include "line_editor.h"

#include <fmt/core.h>

#include <cerrno>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <histedit.h>
#include <langinfo.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

namespace coli::cli {
namespace {

const char* promptText(EditLine*) {
    return "> ";
}

// libedit decodes input with the C library's multibyte functions: without a UTF-8 LC_CTYPE, a
// typed "é" would be mangled. Models' text is UTF-8, so fall back to C.UTF-8 (glibc's built-in).
void useUtf8Input() {
    if (const char* set = std::setlocale(LC_CTYPE, "");
        set && std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0)
        return;
    std::setlocale(LC_CTYPE, "C.UTF-8");
}

} // namespace

std::string defaultChatHistoryPath() {
    if (const char* state = std::getenv("XDG_STATE_HOME"); state && state[0] == '/')
        return std::string(state) + "/colibri/chat_history";
    if (const char* home = std::getenv("HOME"); home && home[0] == '/')
        return std::string(home) + "/.local/state/colibri/chat_history";
    return {};
}

std::unique_ptr<LineEditor> LineEditor::open(const std::string& historyFile) {
    useUtf8Input();
    std::unique_ptr<LineEditor> ed(new LineEditor());
    ed->m_el = el_init("coli", stdin, stdout, stderr);
    ed->m_hist = history_init();
    if (!ed->m_el || !ed->m_hist) return nullptr;
    HistEvent ev;
    history(ed->m_hist, &ev, H_SETSIZE, 1000);
    history(ed->m_hist, &ev, H_SETUNIQUE, 1); // the same line twice in a row is kept once
    el_set(ed->m_el, EL_EDITOR, "emacs");
    el_set(ed->m_el, EL_PROMPT, promptText);
    el_set(ed->m_el, EL_HIST, history, ed->m_hist);
    el_source(ed->m_el, nullptr); // the user's ~/.editrc, as other libedit programs do
    ed->m_file = historyFile;
    if (!ed->m_file.empty() && access(ed->m_file.c_str(), F_OK) == 0 &&
        history(ed->m_hist, &ev, H_LOAD, ed->m_file.c_str()) < 0) {
        fmt::print(stderr,
                   "coli: warning: cannot read the chat history {}; this session's lines "
                   "are kept in memory only\n",
                   ed->m_file);
        ed->m_file.clear();
    }
    return ed;
}

LineEditor::~LineEditor() {
    if (m_el) el_end(m_el);
    if (m_hist) history_end(m_hist);
}

LineReader::Result LineEditor::next(std::string& line) {
    int count = 0;
    errno = 0;
    const char* got = el_gets(m_el, &count);
    if (!got) {
        // count -1 with EINTR: our SIGINT handler ran (signals.h); count 0: Ctrl+D.
        return count < 0 && errno == EINTR ? LineReader::Result::Interrupted
                                           : LineReader::Result::Eof;
    }
    line.assign(got, static_cast<size_t>(count));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.pop_back();
    if (!line.empty()) {
        HistEvent ev;
        history(m_hist, &ev, H_ENTER, line.c_str());
        save();
    }
    return LineReader::Result::Line;
}

void LineEditor::save() {
    if (m_file.empty() || m_saveFailed) return;
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(m_file).parent_path();
    std::filesystem::create_directories(parent, ec);
    if (!ec) std::filesystem::permissions(parent, std::filesystem::perms::owner_all, ec);
    HistEvent ev;
    const mode_t old = umask(077); // the file holds what the user typed: theirs only
    const bool ok = !ec && history(m_hist, &ev, H_SAVE, m_file.c_str()) >= 0;
    umask(old);
    if (!ok) {
        m_saveFailed = true;
        fmt::print(stderr,
                   "coli: warning: cannot write the chat history {}; this session's lines "
                   "are kept in memory only\n",
                   m_file);
    }
}

QuietControlEcho::QuietControlEcho() {
    termios t{};
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t) != 0) return;
    m_lflag = t.c_lflag;
    t.c_lflag &= ~static_cast<tcflag_t>(ECHOCTL);
    m_changed = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
}

QuietControlEcho::~QuietControlEcho() {
    termios t{};
    if (!m_changed || tcgetattr(STDIN_FILENO, &t) != 0) return;
    t.c_lflag = static_cast<tcflag_t>(m_lflag);
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

} // namespace coli::cli
