internal import Foundation
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// The suite's connect timeout, which URLSession on Linux does not have (libcurl's connect
/// timeout is not set by swift-corelibs-foundation; only an idle timeout is).
///
/// A probe resolves the server's host and opens one TCP connection to it, on its own
/// thread so a slow name lookup never blocks the concurrency pool. Requests race it: when
/// the probe fails (refused, no route, no answer within the timeout) the requests are
/// cancelled and the command reports the server offline, so on a dead network every command
/// ends within the connect timeout. When it connects, requests run on to the command's
/// deadline: a slow but working link is never cut short. The probe's connection is closed
/// at once; the server sees a connection without a request.
enum ConnectProbe {
    /// What the probe found.
    enum Outcome: Sendable, Equatable {
        /// A TCP connection was opened.
        case reachable
        /// No connection; the reason for people (`connection refused`, `no answer within 2 s`).
        case unreachable(String)
    }

    /// Probes `host:port`, giving up after `timeout` whatever the name lookup does.
    static func run(host: String, port: Int, timeout: Duration) async -> Outcome {
        let once = Once<Outcome>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                once.install(continuation)
                let thread = Thread {
                    once.finish(blockingProbe(host: host, port: port, timeout: timeout))
                }
                thread.stackSize = 256 * 1024
                thread.start()
                Task {
                    try? await Task.sleep(for: timeout + .milliseconds(50))
                    once.finish(.unreachable("no answer within \(Self.describe(timeout))"))
                }
            }
        } onCancel: {
            once.finish(.unreachable("cancelled"))
        }
    }

    /// `2 s`, `1.5 s`, `250 ms`.
    static func describe(_ duration: Duration) -> String {
        let ms = Int(
            (Double(duration.components.seconds) * 1000
                + Double(duration.components.attoseconds) / 1e15).rounded()
        )
        if ms < 1000 { return "\(ms) ms" }
        if ms % 1000 == 0 { return "\(ms / 1000) s" }
        return "\(Double(ms) / 1000) s"
    }

    /// Resolves and connects, trying each address in turn within the time left.
    static func blockingProbe(host: String, port: Int, timeout: Duration) -> Outcome {
        let end = ContinuousClock.now + timeout
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .unreachable("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var lastReason = "no address for \(host)"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let left = end - ContinuousClock.now
            guard left > .zero else { break }
            switch connect(info.pointee, within: left, timeout: timeout) {
            case .reachable: return .reachable
            case .unreachable(let reason): lastReason = reason
            }
        }
        if ContinuousClock.now >= end {
            return .unreachable("no answer within \(describe(timeout))")
        }
        return .unreachable(lastReason)
    }

    private static func connect(_ info: addrinfo, within time: Duration, timeout: Duration)
        -> Outcome
    {
        let fd = socket(
            info.ai_family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                | Int32(SOCK_CLOEXEC.rawValue),
            0
        )
        guard fd >= 0 else { return .unreachable("cannot open a socket: \(errorText(errno))") }
        defer { close(fd) }
        if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return .reachable }
        guard errno == EINPROGRESS else { return .unreachable(errorText(errno)) }
        let end = ContinuousClock.now + time
        while true {
            let left = end - ContinuousClock.now
            let ms =
                max(0, Int32(clamping: left.components.seconds * 1000))
                + Int32(left.components.attoseconds / 1_000_000_000_000_000)
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, max(0, ms))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return .unreachable("no answer within \(describe(timeout))") }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            return error == 0 ? .reachable : .unreachable(errorText(error))
        }
    }

    private static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }
}

/// A continuation resumed exactly once by whichever of several racers comes first; a
/// result that arrives before the continuation is installed is kept for it.
final class Once<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var value: Value?
        var done = false
    }
    private let state = Mutex<State>(State())

    func install(_ continuation: CheckedContinuation<Value, Never>) {
        let early: Value? = state.withLock { state in
            if state.done, let value = state.value {
                state.value = nil
                return value
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func finish(_ value: Value) {
        let continuation: CheckedContinuation<Value, Never>? = state.withLock { state in
            guard !state.done else { return nil }
            state.done = true
            guard let continuation = state.continuation else {
                state.value = value
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: value)
    }
}
