internal import Foundation
internal import Logging
internal import NIOCore
internal import NIOPosix
internal import ServiceLifecycle
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// systemd's notify protocol (sd_notify(3)) without libsystemd: one datagram per message to
/// the socket named by `NOTIFY_SOCKET`. The unit (`Type=notify`, `WatchdogSec=`) then knows
/// when the server is ready and restarts it when the watchdog pings stop.
public struct SystemdNotifier: Sendable {
    /// The socket: a file system path, or an abstract name (leading `@`).
    public let socketPath: String
    /// How often systemd expects `WATCHDOG=1` (`WATCHDOG_USEC`); nil without a watchdog.
    public let watchdogInterval: Duration?

    /// The notifier systemd set up for this process, or nil when it was not started by
    /// systemd (no `NOTIFY_SOCKET`). A watchdog meant for another process (`WATCHDOG_PID`) is
    /// ignored; `processID` is this process's unless given.
    public init?(environment: [String: String], processID: Int32? = nil) {
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
            path.utf8.count < 108
        else { return nil }
        socketPath = path
        let ourID = processID ?? getpid()
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == ourID } ?? true
        if forUs, let text = environment["WATCHDOG_USEC"], let micros = Int64(text), micros > 0 {
            watchdogInterval = .microseconds(micros)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `message` (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=…`, newline-separated);
    /// false when it could not be sent (systemd gone): the server goes on serving.
    @discardableResult
    public func send(_ message: String) -> Bool {
        let descriptor = socket(
            AF_UNIX,
            Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0
        )
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(socketPath.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }  // abstract namespace
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let payload = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                payload.withUnsafeBytes { bytes in
                    sendto(
                        descriptor,
                        bytes.baseAddress,
                        bytes.count,
                        Int32(MSG_NOSIGNAL),
                        socketAddress,
                        length
                    )
                }
            }
        }
        return sent == payload.count
    }
}

/// Pings systemd's watchdog at half its interval, but only while every event loop runs a
/// task and the database answers a ping within that half: a hung loop or a lost database
/// stops the pings, and systemd restarts the service. Says `STOPPING=1` on a graceful stop.
struct SystemdWatchdog: Service {
    let notifier: SystemdNotifier
    let database: StoreDatabase
    let logger: Logger

    func run() async throws {
        if let interval = notifier.watchdogInterval {
            let period = interval / 2
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                if await Self.answers(database: database, within: period) {
                    notifier.send("WATCHDOG=1")
                } else {
                    logger.warning(
                        "watchdog ping withheld: an event loop or the database did not answer in time"
                    )
                }
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: period) }
                } catch {
                    break
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        notifier.send("STOPPING=1")
    }

    /// Whether every event loop and the database answered within `limit`. The check runs in a
    /// task of its own: a loop that never runs the task leaves it waiting, not this one.
    static func answers(database: StoreDatabase, within limit: Duration) async -> Bool {
        let result = Mutex<Bool?>(nil)
        let check = Task {
            var ok = true
            for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
                if (try? await loop.submit({}).get()) == nil { ok = false }
            }
            let answered = ok ? await database.ping() : false
            result.withLock { $0 = answered }
        }
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let answered = result.withLock({ $0 }) { return answered }
            try? await Task.sleep(for: .milliseconds(20))
        }
        check.cancel()
        return false
    }
}
