// See CStartup.h. Everything here runs before any Swift code: from then on SIGINT and SIGTERM
// are recorded, never lost and never fatal.
#define _GNU_SOURCE
#include "CStartup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t first_signal = 0;
static int signal_pipe[2] = {-1, -1};
static int installed = 0;
static int closed_at_start[3] = {0, 0, 0};

static void on_stop_signal(int number) {
    int saved = errno;
    if (first_signal == 0) first_signal = number;
    unsigned char byte = (unsigned char)number;
    // Non-blocking: with the pipe full (hundreds of signals unread) a byte is dropped, and
    // the watcher has already seen the ones that matter.
    ssize_t ignored = write(signal_pipe[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

static void on_reload_signal(int number) {
    int saved = errno;
    // The same self-pipe as the stop signals; the watcher tells them apart by the byte.
    unsigned char byte = (unsigned char)number;
    ssize_t ignored = write(signal_pipe[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

static void occupy_closed_descriptors(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        closed_at_start[fd] = 1;
        // The wrong direction on purpose: reading a closed stdin or writing a closed stdout
        // must fail (EBADF), not quietly succeed as /dev/null would.
        int opened = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
        if (opened >= 0 && opened != fd) {
            dup2(opened, fd);
            close(opened);
        }
    }
}

void sf_startup_install(void) {
    if (installed) return;
    installed = 1;
    occupy_closed_descriptors();
    if (pipe2(signal_pipe, O_CLOEXEC) == 0) {
        fcntl(signal_pipe[1], F_SETFL, fcntl(signal_pipe[1], F_GETFL) | O_NONBLOCK);
    }
    signal(SIGPIPE, SIG_IGN);
    // Both handlers appear at once: a stop signal that comes while the first is installed and
    // the second not yet waits, blocked, and is delivered to its handler below.
    sigset_t stops, both, previous_mask;
    sigemptyset(&stops);
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    sigprocmask(SIG_BLOCK, &both, &previous_mask);
    const int numbers[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction previous;
        if (sigaction(numbers[i], NULL, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
        struct sigaction action;
        action.sa_handler = on_stop_signal;
        sigfillset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        sigaction(numbers[i], &action, NULL);
        sigaddset(&stops, numbers[i]);
    }
    // A re-exec (scan --text) blocks the stop signals first; one that arrived since is
    // delivered now, to the handler above. A signal left ignored keeps the mask it came with.
    for (int i = 0; i < 2; i++) {
        if (!sigismember(&stops, numbers[i]) && !sigismember(&previous_mask, numbers[i])) {
            sigaddset(&stops, numbers[i]);
        }
    }
    sigprocmask(SIG_UNBLOCK, &stops, NULL);
}

int sf_reload_install(void) {
    sf_startup_install();
    if (signal_pipe[1] < 0) return -1;
    struct sigaction action;
    action.sa_handler = on_reload_signal;
    sigfillset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGHUP, &action, NULL) != 0) return -1;
    sigset_t hangup;
    sigemptyset(&hangup);
    sigaddset(&hangup, SIGHUP);
    sigprocmask(SIG_UNBLOCK, &hangup, NULL);
    return 0;
}

int sf_signal_fd(void) { return signal_pipe[0]; }

int sf_signal_first(void) { return first_signal; }

int sf_startup_fd_was_closed(int fd) { return fd >= 0 && fd <= 2 ? closed_at_start[fd] : 0; }

void sf_signal_block_for_exec(void) {
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, NULL);
}

void sf_signal_unblock(void) {
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &stops, NULL);
}

// Test runners link CommandSupport too (through the test targets), and keep their own signal
// handling: the XCTest/Swift Testing bundle (`*.xctest`) and SwiftPM's `swiftpm-testing-helper`.
// Every other executable that links this code gets the handlers, so no app can forget them.
static int is_test_runner(void) {
    char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return 0;
    path[length] = '\0';
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    size_t size = strlen(name);
    static const char bundle[] = ".xctest";
    if (size >= sizeof bundle - 1 && strcmp(name + size - (sizeof bundle - 1), bundle) == 0) return 1;
    return strcmp(name, "swiftpm-testing-helper") == 0;
}

static void sf_startup_early(void) {
    if (!is_test_runner()) sf_startup_install();
}

// The earliest code an executable can run: its pre-initialisers, called by the dynamic loader
// once it has mapped and relocated every library and before any library's initialiser
// (Foundation's, the Swift runtime's, which take milliseconds) and before any Swift code. Only
// an executable's own pre-initialisers run, which is where this file is linked.
__attribute__((section(".preinit_array"), used)) static void (*const sf_startup_preinit)(void) =
    sf_startup_early;

// A fallback with the same effect where pre-initialisers are not run.
__attribute__((constructor)) static void sf_startup_constructor(void) { sf_startup_early(); }
