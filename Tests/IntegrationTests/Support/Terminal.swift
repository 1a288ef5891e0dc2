import ChildProcesses
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A pseudo-terminal, as a person at a terminal gives a program: the program gets the
/// `slave` side, the test reads and writes the `master` side.
struct PseudoTerminal {
    let master: Int32
    let slave: Int32

    /// A new terminal `columns` wide (and 60 rows); with `rawOutput`, "\n" is written as it
    /// is instead of "\r\n".
    init(columns: Int = 80, rawOutput: Bool = false) throws {
        // posix_openpt and friends are not in Swift's Glibc module: the same through
        // /dev/ptmx and its ioctls (Linux: TIOCSPTLCK = _IOW('T', 0x31, int),
        // TIOCGPTN = _IOR('T', 0x30, unsigned int); the numbers are the same on every Linux
        // architecture Swift runs on).
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(master >= 0, "cannot open /dev/ptmx")
        var unlock: Int32 = 0
        var number: UInt32 = 0
        try #require(ioctl(master, UInt(0x4004_5431), &unlock) == 0)  // TIOCSPTLCK
        try #require(ioctl(master, UInt(0x8004_5430), &number) == 0)  // TIOCGPTN
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(slave >= 0)
        var size = winsize(ws_row: 60, ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(slave, UInt(TIOCSWINSZ), &size)
        if rawOutput {
            var settings = termios()
            tcgetattr(slave, &settings)
            settings.c_oflag &= ~tcflag_t(OPOST)
            tcsetattr(slave, TCSANOW, &settings)
        }
        self.master = master
        self.slave = slave
    }

    /// Starts `executable` with this terminal as its stdin, stdout and stderr.
    func start(_ executable: URL, _ arguments: [String], environment: [String: String])
        async throws -> ChildProcess
    {
        try await ChildProcess.start(
            executable,
            arguments,
            environment: environment,
            stdin: .descriptor(slave),
            stdout: .descriptor(slave),
            stderr: .descriptor(slave)
        )
    }

    /// Whether echo is on for what is typed.
    var echoes: Bool {
        var settings = termios()
        tcgetattr(slave, &settings)
        return settings.c_lflag & tcflag_t(ECHO) != 0
    }

    /// Types `text` on the terminal.
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// What the program writes until `marker` appears, its side closes, or `timeout` seconds
    /// pass.
    func read(until marker: String, timeout: Double = 20) async -> String {
        var bytes: [UInt8] = []
        let end = ContinuousClock.now + .seconds(timeout)
        while !String(decoding: bytes, as: UTF8.self).contains(marker), ContinuousClock.now < end {
            guard let chunk = readAvailable() else { break }
            if chunk.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
            bytes += chunk
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Everything `child` writes until it exits (at most `timeout` seconds), then its outcome.
    func readAll(of child: ChildProcess, timeout: Double = 30) async -> (String, ProcessOutcome) {
        var bytes: [UInt8] = []
        let end = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < end {
            guard let chunk = readAvailable() else { break }
            if !chunk.isEmpty {
                bytes += chunk
                continue
            }
            if !child.isRunning { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let outcome = await child.wait(timeout: 5)
        while let chunk = readAvailable(), !chunk.isEmpty { bytes += chunk }
        return (String(decoding: bytes, as: UTF8.self), outcome)
    }

    /// The bytes ready on the master side now: empty when none are, nil once the slave side
    /// is closed everywhere (EIO) or on an error.
    private func readAvailable() -> [UInt8]? {
        var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = Glibc.read(master, &buffer, buffer.count)
        return count > 0 ? Array(buffer[..<count]) : nil
    }

    func close() {
        Glibc.close(master)
        Glibc.close(slave)
    }
}

/// Runs a command with stdout on a pseudo-terminal of a given width (stderr on a pipe), as
/// a person at a terminal sees it.
enum TerminalRunner {
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String],
        columns: Int
    ) async throws -> ProcessOutcome {
        let terminal = try PseudoTerminal(columns: columns, rawOutput: true)
        let child = try await ChildProcess.start(
            executable,
            arguments,
            environment: environment,
            stdin: .none,
            stdout: .descriptor(terminal.slave)
        )
        // The child has its copy: the master side reads EIO once the child's is closed.
        Glibc.close(terminal.slave)
        defer { Glibc.close(terminal.master) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let end = ContinuousClock.now + .seconds(300)
        while ContinuousClock.now < end {
            var poller = pollfd(fd: terminal.master, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else {
                try? await Task.sleep(for: .milliseconds(10))
                continue
            }
            let count = Glibc.read(terminal.master, &buffer, buffer.count)
            if count <= 0 { break }  // EIO once the child and its copies have closed it
            bytes += buffer[..<count]
        }
        var outcome = await child.wait()
        outcome.stdoutData = Data(bytes)
        return outcome
    }
}
