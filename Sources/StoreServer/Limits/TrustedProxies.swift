internal import Foundation

/// The proxies (load balancers) whose `X-Forwarded-For` and `X-Forwarded-Proto` the server
/// believes (`--trusted-proxy CIDR…`). A request from anywhere else is taken as it comes: its
/// peer is the client, its scheme plain `http`, whatever those headers say.
public struct TrustedProxies: Sendable, Equatable {
    /// One address range: an IPv4 or IPv6 address and a prefix length.
    public struct Range: Sendable, Equatable, CustomStringConvertible {
        let address: [UInt8]
        let prefix: Int

        /// Reads `10.0.0.0/8`, `2001:db8::/32` or a bare address (the whole length).
        public init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
            guard let address = TrustedProxies.bytes(of: parts[0]) else { return nil }
            let length = address.count * 8
            if parts.count == 2 {
                guard let prefix = Int(parts[1]), (0...length).contains(prefix) else { return nil }
                self.prefix = prefix
            } else {
                prefix = length
            }
            self.address = address
        }

        /// Whether `bytes` (an address of the same family) is in the range.
        func contains(_ bytes: [UInt8]) -> Bool {
            guard bytes.count == address.count else { return false }
            var left = prefix
            for (mine, theirs) in zip(address, bytes) where left > 0 {
                let bits = min(8, left)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if mine & mask != theirs & mask { return false }
                left -= bits
            }
            return true
        }

        /// `address/prefix`.
        public var description: String {
            let text =
                address.count == 4
                ? address.map(String.init).joined(separator: ".")
                : stride(from: 0, to: 16, by: 2).map {
                    String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16)
                }.joined(separator: ":")
            return "\(text)/\(prefix)"
        }
    }

    /// The trusted ranges; none by default.
    public var ranges: [Range]

    /// Proxies in `ranges`.
    public init(_ ranges: [Range] = []) { self.ranges = ranges }

    /// Whether `address` (text) is a trusted proxy.
    public func trusts(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The client's address: the peer, or, when the peer is a trusted proxy, the last address
    /// of `X-Forwarded-For` (the header's values, in order) that is not itself a trusted proxy.
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        guard trusts(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard Self.bytes(of: hop) != nil else { return peer }
            if !trusts(hop) { return hop }
        }
        return hops.first.flatMap { Self.bytes(of: $0) != nil ? $0 : nil } ?? peer
    }

    /// The scheme the client used: `X-Forwarded-Proto` (`http` or `https`) from a trusted proxy,
    /// else the connection's own (`direct`: `https` when the server serves TLS itself).
    public func scheme(peer: String, forwardedProto: String?, direct: String = "http") -> String {
        guard trusts(peer), let proto = forwardedProto?.lowercased(),
            proto == "https" || proto == "http"
        else { return direct }
        return proto
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address (an IPv4-mapped IPv6 address as IPv4).
    static func bytes(of text: String) -> [UInt8]? {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return Array(bytes[12..<16])
        }
        return bytes
    }
}
