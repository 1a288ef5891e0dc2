import Foundation
import TestSupport
import Testing

@testable import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The kernel's table of listeners behind a loopback server")
struct ListenerTableTests {
    @Test("Netlink and /proc/net/tcp list the same listener on a port, owned by this user")
    func netlinkAgreesWithProc() throws {
        let (fd, port) = try PeerListener.listeningSocket()
        defer { close(fd) }
        let mine = ListenerTable.Listener(address: "0100007F", uid: geteuid(), isIPv6: false)
        let fromNetlink = try #require(
            ListenerTable.fromNetlink(port: UInt16(port), includeIPv4: true)
        )
        #expect(fromNetlink == [mine])
        #expect(ListenerTable.fromProc(port: UInt16(port), includeIPv4: true) == [mine])
        #expect(ListenerTable.listeners(port: UInt16(port), includeIPv4: true) == [mine])
        // An IPv6 peer is never served by an IPv4 listener: that table is not asked.
        #expect(ListenerTable.fromNetlink(port: UInt16(port), includeIPv4: false) == [])
    }

    @Test("Addresses and ports are written as the kernel prints them (%08X, %04X)")
    func kernelHex() {
        #expect(LoopbackListener.kernelHex(0x0100_007F) == "0100007F")
        #expect(LoopbackListener.kernelHex(0) == "00000000")
        #expect(LoopbackListener.kernelHex(0xFFFF_FFFF) == "FFFFFFFF")
        #expect(LoopbackListener.kernelHex(0xABC, digits: 4) == "0ABC")
        #expect(LoopbackListener.kernelHex(0x1F90, digits: 4) == "1F90")
        for value: UInt32 in [1, 0x10, 0xBEEF, 0x00C0_FFEE, 0x7F00_0001] {
            #expect(LoopbackListener.kernelHex(value) == String(format: "%08X", value))
        }
    }

    @Test("A /proc line read twice (the table changed between two pages) is one listener")
    func procLineReadTwice() {
        // Port 8080 (1F90): a listener of uid 1000, its line again as a second page starts
        // with it, a connection on the port (01, not a listener), and a listener on 8081.
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4711 1 0000000000000000 100 0 0 10 0
               0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4711 1 0000000000000000 100 0 0 10 0
               1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4712 1 0000000000000000 20 4 30 10 -1
               2: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4713 1 0000000000000000 100 0 0 10 0
            """
        let listed = ListenerTable.procListeners(in: Array(table.utf8), port: 8080, isIPv6: false)
        #expect(listed == [ListenerTable.Listener(address: "0100007F", uid: 1000, isIPv6: false)])
        #expect(
            ListenerTable.procListeners(in: Array(table.utf8), port: 8081, isIPv6: false)
                == [ListenerTable.Listener(address: "00000000", uid: 0, isIPv6: false)]
        )
    }

    @Test("A port nobody listens on lists nothing, by netlink and by /proc")
    func closedPortListsNothing() throws {
        // Bound but not listening, and held, so no other test's server takes the port.
        let closed = try ClosedPort()
        defer { closed.release() }
        #expect(ListenerTable.fromNetlink(port: UInt16(closed.port), includeIPv4: true) == [])
        #expect(ListenerTable.fromProc(port: UInt16(closed.port), includeIPv4: true) == [])
    }

    @Test("A connected socket on the port is not a listener, and not listed")
    func connectionsAreNotListeners() throws {
        let (fd, port) = try PeerListener.listeningSocket()
        defer { close(fd) }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(client) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)
        let listed = try #require(ListenerTable.fromNetlink(port: UInt16(port), includeIPv4: true))
        #expect(listed.count == 1)
    }

    @Test("A netlink error reply is a failure (the /proc fallback answers), not an empty table")
    func errorReplyFails() {
        var datagram: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value) { datagram += $0 }
        }
        append(UInt32(36))  // nlmsg_len: header + errno + the request's header
        append(UInt16(2))  // NLMSG_ERROR
        append(UInt16(0))
        append(UInt32(7))  // the request's sequence
        append(UInt32(0))
        append(Int32(-EPERM))
        datagram += [UInt8](repeating: 0, count: 16)
        var found: [ListenerTable.Listener] = []
        #expect(ListenerTable.parse(datagram[...], port: 80, sequence: 7, into: &found) == .failed)
        #expect(found.isEmpty)
    }

    @Test("The request asks for TCP listeners on the port, in network byte order")
    func requestLayout() {
        let bytes = ListenerTable.request(family: UInt8(AF_INET), port: 0x1F90, sequence: 3)
        #expect(bytes.count == 72)
        #expect(bytes[16] == UInt8(AF_INET))
        #expect(bytes[17] == UInt8(IPPROTO_TCP))
        #expect(Array(bytes[20..<24]) == [0x00, 0x04, 0x00, 0x00])  // 1 << TCP_LISTEN
        #expect(Array(bytes[24..<26]) == [0x1F, 0x90])
    }
}
