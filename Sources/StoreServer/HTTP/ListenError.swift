internal import Foundation
internal import NIOCore

#if canImport(Glibc)
    internal import Glibc
#endif

/// The server could not listen on an address: it is in use, not this machine's, or needs
/// privileges. The description names the address and what to do.
public struct ListenError: Error, CustomStringConvertible {
    /// The host (name or address) asked for.
    public let host: String
    /// The port asked for.
    public let port: Int
    /// Why, in words.
    public let reason: String

    init(host: String, port: Int, cause: any Error) {
        self.host = host
        self.port = port
        let code = (cause as? IOError)?.errnoCode
        let text = "\(cause)"
        if code == EADDRINUSE || text.contains("Address already in use") {
            reason = "the address is in use (another server on this port? --port chooses another)"
        } else if code == EACCES || text.contains("Permission denied") {
            reason = "permission denied (ports below 1024 need privileges)"
        } else if code == EADDRNOTAVAIL || text.contains("Cannot assign requested address") {
            reason = "the address is not one of this machine's (--host)"
        } else if let code {
            reason = String(cString: strerror(code))
        } else {
            reason = text
        }
    }

    /// `cannot listen on HOST:PORT: REASON`.
    public var description: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "cannot listen on \(shown):\(port): \(reason)"
    }
}
