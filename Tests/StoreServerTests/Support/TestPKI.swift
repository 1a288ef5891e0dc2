import ChildProcesses
import Foundation
import StoreServer
import Testing

/// A private certificate authority made by `openssl` in a temporary directory, and server
/// certificates it signs for 127.0.0.1 and localhost, as a store makes its own.
struct TestPKI: Sendable {
    /// The directory holding every file.
    let directory: URL
    /// The authority's certificate (what clients trust).
    var authority: String { directory.appendingPathComponent("ca.crt").path }

    /// A new authority in a new temporary directory.
    static func make() async throws -> TestPKI {
        let pki = TestPKI(directory: try TestDatabases.temporaryDirectory("pki"))
        try await pki.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", pki.path("ca.key"), "-out", pki.path("ca.crt"), "-days", "2",
            "-subj", "/CN=Shopfloor Test CA",
        ])
        return pki
    }

    /// A server certificate `name` (its common name) with serial `serial`, signed by the
    /// authority, valid for 127.0.0.1 and localhost; the PEM files `name.crt` (the server's
    /// certificate, then the authority's: a chain) and `name.key`.
    func server(_ name: String, serial: Int) async throws -> TLSFiles {
        try await openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", "/CN=\(name)",
        ])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: path("\(name).ext"),
            atomically: true,
            encoding: .utf8
        )
        try await openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.crt"), "-CAkey",
            path("ca.key"), "-set_serial", String(serial), "-days", "2", "-extfile",
            path("\(name).ext"), "-out", path("\(name).leaf"),
        ])
        let chain =
            try String(contentsOfFile: path("\(name).leaf"), encoding: .utf8)
            + String(contentsOfFile: path("ca.crt"), encoding: .utf8)
        try chain.write(toFile: path("\(name).crt"), atomically: true, encoding: .utf8)
        return TLSFiles(certificate: path("\(name).crt"), key: path("\(name).key"))
    }

    /// Copies `source`'s files over `target`'s, as an administrator renews a certificate.
    func install(_ source: TLSFiles, as target: TLSFiles) throws {
        for (from, to) in [(source.certificate, target.certificate), (source.key, target.key)] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: from))
            try bytes.write(to: URL(fileURLWithPath: to), options: .atomic)
        }
    }

    /// A renewal in waiting: two server certificates (CN server1 and server2) and the files
    /// a server is pointed at (`current.crt`, `current.key`), holding the first.
    func renewal() async throws -> (first: TLSFiles, second: TLSFiles, current: TLSFiles) {
        let first = try await server("server1", serial: 1001)
        let second = try await server("server2", serial: 1002)
        let current = TLSFiles(certificate: path("current.crt"), key: path("current.key"))
        try install(first, as: current)
        return (first, second, current)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    private func openssl(_ arguments: [String]) async throws {
        let outcome = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            arguments,
            timeout: 60
        )
        try #require(outcome.status == 0 && !outcome.signalled, "openssl: \(outcome)")
    }
}

/// `curl` against a TLS server, trusting only the test authority.
enum TLSClient {
    /// What one `curl` run saw: its exit status, the body, the certificate's subject line and
    /// the status line of the answer.
    struct Seen: Sendable {
        var status: Int32
        var body: String
        var verbose: String

        /// `CN=…` of the certificate the server presented, from curl's verbose output.
        var subject: String? {
            verbose.split(separator: "\n").first { $0.contains("subject: ") }
                .map { String($0[$0.range(of: "subject: ")!.upperBound...]) }
        }
    }

    /// `curl --cacert AUTHORITY URL` with `extra` arguments.
    static func get(_ url: String, authority: String?, extra: [String] = []) async throws -> Seen {
        var arguments = ["-sS", "-v", "--max-time", "20"]
        if let authority { arguments += ["--cacert", authority] }
        let outcome = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/curl"),
            arguments + extra + [url],
            timeout: 60
        )
        return Seen(status: outcome.status, body: outcome.stdout, verbose: outcome.stderr)
    }
}
