// The second Ctrl+C exits at once (cli/signals.h); when it lands while an answer streams, the
// terminal's ^C echo, switched off for the answer (QuietControlEcho), must be restored first, or
// the user's shell is left without it. Deterministic: a forked child whose stdin is a pty raises
// SIGINT twice (raise() delivers synchronously); the parent reads the pty's modes through the
// master after the child exited.
#include "line_editor.h"
#include "signals.h"

#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace {

struct Child {
    int status = -1;
    tcflag_t before = 0, after = 0;
};

// Runs `body` in a child whose stdin is a fresh pty slave; returns its wait status and the pty's
// local modes before and after.
template <class Body> Child runOnPty(Body body) {
    int master = -1, slave = -1;
    Child c;
    if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return c;
    termios t{};
    tcgetattr(master, &t);
    c.before = t.c_lflag;
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(slave, STDIN_FILENO);
        close(master);
        body();
        _exit(0);
    }
    close(slave);
    waitpid(pid, &c.status, 0);
    tcgetattr(master, &t);
    c.after = t.c_lflag;
    close(master);
    return c;
}

TEST(Signals, SecondCtrlCDuringAnAnswerRestoresTheTerminal) {
    const Child c = runOnPty([] {
        coli::cli::installSigintHandler();
        const coli::cli::QuietControlEcho quiet; // an answer streams
        termios t{};
        tcgetattr(STDIN_FILENO, &t);
        if (t.c_lflag & ECHOCTL) _exit(3); // the echo was not switched off
        raise(SIGINT);                     // ends the answer at the next token...
        raise(SIGINT);                     // ...but a second one exits at once
        _exit(4);
    });
    ASSERT_TRUE(WIFEXITED(c.status)) << c.status;
    EXPECT_EQ(WEXITSTATUS(c.status), 130);
    EXPECT_TRUE(c.before & ECHOCTL);
    EXPECT_TRUE(c.after & ECHOCTL) << "the terminal was left without ^C echo";
}

TEST(Signals, FirstCtrlCOnlySetsTheFlag) {
    const Child c = runOnPty([] {
        coli::cli::installSigintHandler();
        raise(SIGINT);
        _exit(coli::cli::interruptFlag().load() ? 0 : 5);
    });
    ASSERT_TRUE(WIFEXITED(c.status));
    EXPECT_EQ(WEXITSTATUS(c.status), 0);
}

TEST(Signals, AfterTheAnswerTheTerminalIsBackAndExitLeavesItAlone) {
    const Child c = runOnPty([] {
        coli::cli::installSigintHandler();
        { const coli::cli::QuietControlEcho quiet; }
        termios t{};
        tcgetattr(STDIN_FILENO, &t);
        t.c_lflag &= ~static_cast<tcflag_t>(ECHO); // the user's own change after the answer
        tcsetattr(STDIN_FILENO, TCSANOW, &t);
        raise(SIGINT);
        raise(SIGINT);
        _exit(4);
    });
    ASSERT_TRUE(WIFEXITED(c.status));
    EXPECT_EQ(WEXITSTATUS(c.status), 130);
    EXPECT_FALSE(c.after & ECHO) << "a stale saved state was restored";
    EXPECT_TRUE(c.after & ECHOCTL);
}

} // namespace
