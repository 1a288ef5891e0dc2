internal import Foundation
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// Who owns the listening socket behind a loopback connection, as the kernel says
/// (``ListenerTable``: netlink's socket diagnostics, else `/proc/net/tcp`): the proof a
/// plain-http server on this machine gives before anything is sent to it.
///
/// Any local user can bind a free loopback port; while the suite's server is stopped (an
/// upgrade, a restart) a squatter on its port would otherwise receive the next password,
/// bearer token or refresh token. A listener is trusted only when it belongs to the client's
/// own user or to root (a system service); see Auth's README, "Threat model".
enum LoopbackListener {
    /// How a connected loopback peer's listener was judged.
    enum Verdict: Equatable {
        /// Owned by this user or root.
        case trusted
        /// Owned by another user (the uid).
        case untrusted(uid_t)
        /// Not a loopback address: the check does not apply.
        case notLoopback
        /// No listener for the address was found (it closed meanwhile): not trusted.
        case unknown
    }

    /// Judges the listener `fd` (a connected TCP socket) is connected to.
    static func verdict(forConnected fd: Int32) -> Verdict {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard got == 0, let peer = Peer(storage) else { return .notLoopback }
        guard peer.isLoopback else { return .notLoopback }
        let owners = listenerOwners(for: peer)
        guard !owners.isEmpty else { return .unknown }
        let me = getuid()
        let effective = geteuid()
        if let stranger = owners.first(where: { $0 != me && $0 != effective && $0 != 0 }) {
            return .untrusted(stranger)
        }
        return .trusted
    }

    /// A peer address in the kernel's `/proc/net` notation.
    struct Peer {
        /// 8 hex digits (IPv4) or 32 (IPv6), as the kernel prints them.
        var address: String
        var port: UInt16
        var isIPv6: Bool
        var isLoopback: Bool

        init?(_ storage: sockaddr_storage) {
            var copy = storage
            switch Int32(storage.ss_family) {
            case AF_INET:
                let address = withUnsafePointer(to: &copy) {
                    $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                }
                // The kernel prints the 32-bit word as this machine reads it.
                self.address = LoopbackListener.kernelHex(address.sin_addr.s_addr)
                port = UInt16(bigEndian: address.sin_port)
                isIPv6 = false
                isLoopback = UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127
            case AF_INET6:
                let address = withUnsafePointer(to: &copy) {
                    $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                }
                var words = address.sin6_addr
                let parts = withUnsafeBytes(of: &words) { raw in
                    (0..<4).map { raw.load(fromByteOffset: $0 * 4, as: UInt32.self) }
                }
                self.address = parts.map { LoopbackListener.kernelHex($0) }.joined()
                port = UInt16(bigEndian: address.sin6_port)
                isIPv6 = true
                let bytes = withUnsafeBytes(of: &words) { Array($0) }
                let loopback6 = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
                let mapped4 =
                    bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
                    && bytes[12] == 127
                isLoopback = loopback6 || mapped4
            default:
                return nil
            }
        }
    }

    /// The uids of the listening sockets that would take a connection to `peer`: those
    /// bound to its exact address, else to the wildcard address (`0.0.0.0`, `::`).
    ///
    /// Answers are kept for a second per address and port: a command that makes hundreds of
    /// requests (a prefetch) reads the tables once a second, not once a request.
    static func listenerOwners(for peer: Peer) -> [uid_t] {
        let key = "\(peer.address):\(peer.port)"
        let now = ContinuousClock.now
        if let known = recent.withLock({ $0[key] }), now - known.at < .seconds(1) {
            return known.owners
        }
        let owners = readOwners(for: peer)
        recent.withLock { $0[key] = (now, owners) }
        return owners
    }

    private static let recent = Mutex<[String: (at: ContinuousClock.Instant, owners: [uid_t])]>([:])

    /// The owners of the listeners on the peer's port (``ListenerTable``) that would take
    /// the connection, for ``listenerOwners(for:)``.
    static func readOwners(for peer: Peer) -> [uid_t] {
        owners(of: ListenerTable.listeners(port: peer.port, includeIPv4: !peer.isIPv6), for: peer)
    }

    /// Of `listeners`, the owners of those bound to the peer's exact address, else of those
    /// bound to the wildcard address.
    static func owners(of listeners: [ListenerTable.Listener], for peer: Peer) -> [uid_t] {
        var exact: [uid_t] = []
        var wildcard: [uid_t] = []
        // An IPv4 peer may be served by a dual-stack IPv6 listener, as `::ffff:a.b.c.d` or `::`.
        let mapped = "0000000000000000FFFF0000" + peer.address
        for listener in listeners where listener.isIPv6 || !peer.isIPv6 {
            let address = listener.address
            if address == peer.address || (listener.isIPv6 && !peer.isIPv6 && address == mapped) {
                exact.append(listener.uid)
            } else if address.allSatisfy({ $0 == "0" }) {
                wildcard.append(listener.uid)
            }
        }
        return exact.isEmpty ? wildcard : exact
    }

    /// `value` as the kernel prints it in `/proc/net/tcp`: `digits` upper-case hex digits,
    /// zero-padded (`%08X` without Foundation's formatter, whose first use cost a loopback
    /// command about 0.3 ms).
    static func kernelHex(_ value: UInt32, digits: Int = 8) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return text.count >= digits
            ? text : String(repeating: "0", count: digits - text.count) + text
    }

    /// `user 1001 (alice)`.
    static func describe(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else {
            return "user \(uid)"
        }
        return "user \(uid) (\(String(cString: name)))"
    }
}
