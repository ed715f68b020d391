#include "line_reader.h"

#include "signals.h"

#include <cerrno>
#include <unistd.h>

namespace coli::cli {

LineReader::Result LineReader::next(std::string& line) {
    for (;;) {
        if (const size_t nl = m_buf.find('\n'); nl != std::string::npos) {
            line = m_buf.substr(0, nl);
            m_buf.erase(0, nl + 1);
            if (line.ends_with('\r')) line.pop_back();
            return Result::Line;
        }
        if (m_eof) {
            if (m_buf.empty()) return Result::Eof;
            line = std::move(m_buf);
            m_buf.clear();
            return Result::Line;
        }
        if (interruptFlag().load()) return Result::Interrupted;
        char chunk[4096];
        const ssize_t n = read(m_fd, chunk, sizeof chunk);
        if (n > 0) {
            m_buf.append(chunk, static_cast<size_t>(n));
        } else if (n == 0) {
            m_eof = true;
        } else if (errno == EINTR) {
            if (interruptFlag().load()) return Result::Interrupted;
        } else {
            m_eof = true; // a read error ends the conversation like EOF
        }
    }
}

} // namespace coli::cli
