#pragma once
// Line editing and history for `coli chat` on a terminal, with libedit (editline(3)): arrow keys,
// Emacs-style editing keys, Up/Down through earlier lines. Used only when stdin and stdout are
// terminals; piped input goes through the plain LineReader.
// Thread-safety: one LineEditor per process, used from one thread.
#include "line_reader.h"

#include <memory>
#include <string>

struct editline;
struct history;

namespace coli::cli {

// Where chat history is kept: $XDG_STATE_HOME/colibri/chat_history (XDG_STATE_HOME absolute),
// else $HOME/.local/state/colibri/chat_history; "" when neither is an absolute folder.
std::string defaultChatHistoryPath();

class LineEditor {
public:
    // Sets up editing on stdin/stdout with the prompt "> ". historyFile: where earlier sessions'
    // lines are loaded from and every entered line is saved to (created 0600, its folder 0700);
    // "" keeps history for this session only. A history file that cannot be read or written is
    // reported once on stderr and the session goes on without it. Returns nullptr when libedit
    // cannot be set up (the caller then reads plain lines).
    static std::unique_ptr<LineEditor> open(const std::string& historyFile);
    ~LineEditor();
    LineEditor(const LineEditor&) = delete;
    LineEditor& operator=(const LineEditor&) = delete;

    // The next line without its newline. A non-empty line goes into the history. Interrupted:
    // Ctrl+C at the prompt (SIGINT, with the handler from signals.h); Eof: Ctrl+D on an empty line.
    LineReader::Result next(std::string& line);

private:
    LineEditor() = default;
    void save();

    struct editline* m_el = nullptr;
    struct history* m_hist = nullptr;
    std::string m_file;
    bool m_saveFailed = false;
};

// While alive, the terminal on stdin does not echo control characters as "^C": Ctrl+C during an
// answer then leaves no "^C" inside the answer's text. Does nothing when stdin is not a terminal.
class QuietControlEcho {
public:
    QuietControlEcho();
    ~QuietControlEcho();
    QuietControlEcho(const QuietControlEcho&) = delete;
    QuietControlEcho& operator=(const QuietControlEcho&) = delete;

private:
    bool m_changed = false;
    unsigned m_lflag = 0;
};

} // namespace coli::cli
