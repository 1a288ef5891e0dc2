// Process start-up for the suite's command-line apps: standard descriptors and stop signals,
// set up before any Swift code runs, by a constructor in every executable that links this
// target (test runners excepted). Used by Sources/CommandSupport only.
#ifndef SHOPFLOOR_CSTARTUP_H
#define SHOPFLOOR_CSTARTUP_H

#ifdef __cplusplus
extern "C" {
#endif

/// Makes descriptors 0, 1 and 2 exist (a closed one is reopened on /dev/null for the wrong
/// direction, so using it fails instead of touching a file opened later), ignores SIGPIPE
/// (a write to a closed pipe fails with EPIPE), and catches SIGINT and SIGTERM into a
/// self-pipe. Idempotent. A stop signal that was ignored when the process started stays
/// ignored, as POSIX asks of programs started in the background.
void sf_startup_install(void);

/// Catches SIGHUP into the same self-pipe (one byte, SIGHUP), for a server that reloads its
/// files on it; until this is called SIGHUP keeps its default action (it ends a client app
/// whose terminal hangs up). Returns 0, or -1 when the handler could not be installed.
int sf_reload_install(void);

/// The read end of the self-pipe: one byte, the signal number, per SIGINT, SIGTERM or (once
/// sf_reload_install ran) SIGHUP.
int sf_signal_fd(void);

/// The first SIGINT or SIGTERM received, or 0.
int sf_signal_first(void);

/// Whether descriptor `fd` (0, 1 or 2) was closed when the process started.
int sf_startup_fd_was_closed(int fd);

/// Blocks SIGINT and SIGTERM before an exec of the same program, so a signal that arrives
/// while the new image starts is kept pending for it instead of killing it.
void sf_signal_block_for_exec(void);

/// Undoes sf_signal_block_for_exec after a failed exec.
void sf_signal_unblock(void);

#ifdef __cplusplus
}
#endif
#endif
