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

        /// A 401 whose problem is an invalid signature (a replay, a tampered request).
        var refusesSignature: Bool {
            status == 401
                && String(decoding: body, as: UTF8.self).contains(AuthProblemType.invalidSignature)
        }
    }

    /// Sends one request to 127.0.0.1:`port` and reads the answer until the server closes
    /// (on a thread of its own, never on the concurrency pool).
    static func send(
        port: Int,
        method: String,
        path: String,
        host: String,
        headers: [(String, String)] = [],
        body: Data = Data()
    ) async throws -> Reply {
        let socket = try RawSocket(port: port)
        var head =
            "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var request = Data(head.utf8)
        request.append(body)
        try socket.send(request)
        let response = await socket.bytesUntilClosedOffPool(within: 30).bytes
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
