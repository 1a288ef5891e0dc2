import Auth
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP/1.1 client on a plain socket, for requests URLSession will not send: a
/// chosen `Host` (two instances behind one name), the exact same signed headers twice.
enum RawHTTP {
    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    /// Sends one request to 127.0.0.1:`port` and reads the answer until the server closes.
    static func send(
        port: Int,
        method: String,
        path: String,
        host: String,
        headers: [(String, String)] = [],
        body: Data = Data()
    ) throws -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PostgresClusterError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw PostgresClusterError("connect to port \(port) failed") }
        var head =
            "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var request = Data(head.utf8)
        request.append(body)
        try request.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else { throw PostgresClusterError("write failed") }
                offset += written
            }
        }
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            response.append(contentsOf: chunk[0..<count])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else {
            throw PostgresClusterError("no HTTP answer")
        }
        let lines = String(decoding: response[..<split.lowerBound], as: UTF8.self).components(
            separatedBy: "\r\n"
        )
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        return Reply(status: status, headers: fields, body: Data(response[split.upperBound...]))
    }

    /// The headers of a request signed with the credentials in `directory` (a signed-in
    /// `AuthClient`'s token store), for `http://host` + `path`.
    static func signedHeaders(
        directory: URL,
        method: String,
        host: String,
        path: String,
        body: Data = Data(),
        created: Int64 = Int64(Date().timeIntervalSince1970),
        contentType: String? = nil,
        ifMatch: String? = nil
    ) throws -> [(String, String)] {
        let credentials = try #require(try TokenStore(directory: directory).load())
        let signer = RequestSigner(key: try credentials.makeSigningKey())
        let signed = signer.sign(
            method: method,
            targetURI: "http://\(host)\(path)",
            body: body,
            created: created,
            covering: CoveredHeaders(
                contentType: contentType,
                idempotencyKey: nil,
                ifMatch: ifMatch
            )
        )
        return [
            ("Authorization", "Bearer \(credentials.accessToken)"),
            ("Signature-Input", signed.signatureInput),
            ("Signature", signed.signature), ("Content-Digest", signed.contentDigest),
        ] + (contentType.map { [("Content-Type", $0)] } ?? [])
            + (ifMatch.map { [("If-Match", $0)] } ?? [])
    }
}
