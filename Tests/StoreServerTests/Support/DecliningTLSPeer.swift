import Foundation
import Synchronization
import TestSupport

/// A peer in a PostgreSQL server's place that offers no TLS: it answers a client's
/// SSLRequest with `N`, as a server without TLS does, and counts the startup messages that
/// arrive after that (a client that goes on in plain sends one, with the user's name).
final class DecliningTLSPeer: Sendable {
    private final class Count: Sendable { let value = Mutex(0) }
    private let listener: PeerListener
    private let seen = Count()

    init() throws {
        let seen = self.seen
        listener = try PeerListener { fd in
            // The SSLRequest: length 8, code 80877103.
            let request = PeerListener.read(fd) { $0.count >= 8 }
            guard request.count >= 8, request[4...7].elementsEqual([0x04, 0xD2, 0x16, 0x2F])
            else { return }
            guard PeerListener.write(fd, Array("N".utf8)) else { return }
            let rest = PeerListener.read(fd) { !$0.isEmpty }
            if !rest.isEmpty { seen.value.withLock { $0 += 1 } }
        }
    }

    var port: Int { listener.port }

    /// Startup messages sent in plain after the refusal.
    var startupMessagesSeen: Int { seen.value.withLock { $0 } }
}
