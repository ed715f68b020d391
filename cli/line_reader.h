#pragma once
// Reads lines from a file descriptor with read(2), so that Ctrl+C at the chat prompt (SIGINT,
// installed without SA_RESTART) interrupts the wait instead of being retried silently.
#include <string>

namespace coli::cli {

class LineReader {
public:
    enum class Result { Line, Eof, Interrupted };
    explicit LineReader(int fd) : m_fd(fd) {}
    // The next line without its "\n" (or "\r\n"); a last line without a newline is a Line too.
    Result next(std::string& line);

private:
    int m_fd;
    std::string m_buf;
    bool m_eof = false;
};

} // namespace coli::cli
