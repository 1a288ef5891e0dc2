internal import Foundation
internal import Plumbing

#if canImport(Glibc)
    internal import Glibc
#endif

/// The kernel's TCP listening sockets on one port, with the uid that owns each: what
/// ``LoopbackListener`` judges a loopback server by.
///
/// Asked first over netlink (`NETLINK_SOCK_DIAG`, the interface `ss` uses), for listening
/// sockets on the port only: the kernel walks its small listening table. `/proc/net/tcp` and
/// `tcp6` are the fallback where netlink is not allowed (a seccomp filter): reading them
/// walks every bucket of the established-connections hash (262,144 on a machine with 24 GiB,
/// about 5 ms of kernel time per file, empty or not), which made the check the largest part of
/// a loopback request's CPU time.
enum ListenerTable {
    /// One listening socket.
    struct Listener: Equatable {
        /// The bound address as `/proc/net/tcp` prints it: 8 hex digits (IPv4) or 32 (IPv6),
        /// each 32-bit word as this machine reads it; all zeros is the wildcard address.
        var address: String
        /// The socket's owner.
        var uid: uid_t
        /// From the IPv6 table.
        var isIPv6: Bool
    }

    /// The listeners on `port`: IPv6 ones always, IPv4 ones when `includeIPv4`.
    static func listeners(port: UInt16, includeIPv4: Bool) -> [Listener] {
        if let found = fromNetlink(port: port, includeIPv4: includeIPv4) { return found }
        return fromProc(port: port, includeIPv4: includeIPv4)
    }

    // MARK: - Netlink (sock_diag)

    /// `NETLINK_SOCK_DIAG`, `SOCK_DIAG_BY_FAMILY`, `NLM_F_REQUEST | NLM_F_DUMP`, `NLMSG_ERROR`,
    /// `NLMSG_DONE` and `TCP_LISTEN` from the Linux UAPI headers (`linux/netlink.h`,
    /// `linux/sock_diag.h`, `netinet/tcp.h`), which Glibc's module does not import.
    private static let sockDiagProtocol: Int32 = 4
    private static let sockDiagByFamily: UInt16 = 20
    private static let dumpRequest: UInt16 = 0x301
    private static let messageError: UInt16 = 2
    private static let messageDone: UInt16 = 3
    private static let listenState: UInt8 = 10
    /// `sizeof(struct nlmsghdr)` and `sizeof(struct inet_diag_msg)`.
    private static let headerSize = 16
    private static let diagMessageSize = 72

    /// The listeners from one netlink dump per address family, or nil when netlink cannot
    /// answer (not allowed, an error reply, a short reply).
    static func fromNetlink(port: UInt16, includeIPv4: Bool) -> [Listener]? {
        let fd = socket(
            AF_NETLINK,
            Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            sockDiagProtocol
        )
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // The kernel answers a dump at once; the timeout only guards against a filter that
        // swallows the request.
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var found: [Listener] = []
        var sequence: UInt32 = 0
        for family in includeIPv4 ? [AF_INET, AF_INET6] : [AF_INET6] {
            sequence += 1
            guard send(request(family: UInt8(family), port: port, sequence: sequence), on: fd),
                let listeners = receive(on: fd, port: port, sequence: sequence)
            else { return nil }
            found += listeners
        }
        return found
    }

    /// `struct nlmsghdr` + `struct inet_diag_req_v2` asking for TCP sockets in LISTEN whose
    /// local port is `port` (the kernel filters listening sockets by `idiag_sport`).
    static func request(family: UInt8, port: UInt16, sequence: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(72)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value) { bytes += $0 }
        }
        append(UInt32(72))  // nlmsg_len
        append(sockDiagByFamily)  // nlmsg_type
        append(dumpRequest)  // nlmsg_flags
        append(sequence)  // nlmsg_seq
        append(UInt32(0))  // nlmsg_pid: the kernel
        bytes += [family, UInt8(IPPROTO_TCP), 0, 0]  // family, protocol, ext, pad
        append(UInt32(1) << listenState)  // idiag_states
        append(port.bigEndian)  // id.idiag_sport
        bytes += [UInt8](repeating: 0, count: 72 - bytes.count)  // dport, src, dst, if, cookie
        return bytes
    }

    private static func send(_ bytes: [UInt8], on fd: Int32) -> Bool {
        while true {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
            if sent < 0 && errno == EINTR { continue }
            return sent == bytes.count
        }
    }

    /// Reads the dump's replies up to `NLMSG_DONE`.
    private static func receive(on fd: Int32, port: UInt16, sequence: UInt32) -> [Listener]? {
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        var found: [Listener] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            switch parse(buffer[0..<count], port: port, sequence: sequence, into: &found) {
            case .more: continue
            case .done: return found
            case .failed: return nil
            }
        }
    }

    enum ParseState { case more, done, failed }

    /// Parses one datagram of netlink messages, appending each listener on `port`.
    static func parse(
        _ datagram: ArraySlice<UInt8>,
        port: UInt16,
        sequence: UInt32,
        into found: inout [Listener]
    ) -> ParseState {
        let bytes = Array(datagram)
        func load<T: FixedWidthInteger>(_ offset: Int, as: T.Type) -> T {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
        }
        var offset = 0
        while offset + headerSize <= bytes.count {
            let length = Int(load(offset, as: UInt32.self))
            let type = load(offset + 4, as: UInt16.self)
            guard length >= headerSize, offset + length <= bytes.count,
                load(offset + 8, as: UInt32.self) == sequence
            else { return .failed }
            if type == messageDone { return .done }
            guard type == sockDiagByFamily, length >= headerSize + diagMessageSize else {
                return .failed
            }
            let message = offset + headerSize
            let family = Int32(bytes[message])
            if bytes[message + 1] == listenState,
                UInt16(bigEndian: load(message + 4, as: UInt16.self)) == port
            {
                let words = family == AF_INET6 ? 4 : 1
                let address = (0..<words).map {
                    LoopbackListener.kernelHex(load(message + 8 + $0 * 4, as: UInt32.self))
                }.joined()
                found.append(
                    Listener(
                        address: address,
                        uid: load(message + 64, as: UInt32.self),
                        isIPv6: family == AF_INET6
                    )
                )
            }
            offset += (length + 3) & ~3
        }
        return .more
    }

    // MARK: - /proc/net/tcp

    /// The listeners from `/proc/net/tcp` (and `tcp6`), looking closely only at the lines that
    /// name the port.
    static func fromProc(port: UInt16, includeIPv4: Bool) -> [Listener] {
        var found: [Listener] = []
        for (file, isIPv6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
            guard isIPv6 || includeIPv4, let bytes = readAll(file) else { continue }
            found += procListeners(in: bytes, port: port, isIPv6: isIPv6)
        }
        return found
    }

    /// The listeners on `port` in one reading of a `/proc/net/tcp` or `tcp6` table, each
    /// once: the kernel hands the table out a page of lines per read, and when sockets come
    /// and go between two reads a line can come twice (seen beside tests that open and close
    /// hundreds of sockets).
    static func procListeners(in bytes: [UInt8], port: UInt16, isIPv6: Bool) -> [Listener] {
        let needle = Array(":\(LoopbackListener.kernelHex(UInt32(port), digits: 4)) ".utf8)
        var found: [Listener] = []
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            defer { start = end + 1 }
            let line = bytes[start..<end]
            // Only a line whose local address has this port (the first ":PORT ").
            guard let at = firstRange(of: needle, in: line) else { continue }
            let fields = line.split(separator: UInt8(ascii: " "))
            // sl local rem st tx:rx tr:when retrnsmt uid ...
            guard fields.count > 7, fields[3].elementsEqual("0A".utf8),
                fields[1].endIndex == at + needle.count - 1,
                let uid = uid_t(String(decoding: fields[7], as: UTF8.self))
            else { continue }
            let address = String(decoding: fields[1].prefix(fields[1].count - 5), as: UTF8.self)
            let listener = Listener(address: address, uid: uid, isIPv6: isIPv6)
            if !found.contains(listener) { found.append(listener) }
        }
        return found
    }

    private static func firstRange(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index + needle.count <= haystack.endIndex {
            if haystack[index] == needle[0],
                haystack[index..<(index + needle.count)].elementsEqual(needle)
            {
                return index
            }
            index += 1
        }
        return nil
    }

    /// A `/proc` file read to its end (its size says 0; the kernel hands it out a page of
    /// lines per read).
    static func readAll(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return try? FileIO.readAll(fd, limit: 64 << 20, name: path)
    }
}
