internal import Foundation
internal import HummingbirdCore
public import Logging
internal import NIOCore
internal import NIOSSL
internal import Plumbing
internal import Synchronization

/// The certificate and key files the server serves TLS with (`serve --tls-certificate
/// --tls-key`), both PEM: the certificate file holds the server's certificate first, then any
/// intermediates; the key file its private key, unencrypted.
public struct TLSFiles: Sendable, Equatable {
    /// The PEM certificate chain: the server's certificate, then its intermediates.
    public var certificate: String
    /// The PEM private key of the certificate.
    public var key: String

    /// The two files.
    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

/// A certificate or key that cannot be served: a file that cannot be read, is not PEM, holds
/// no certificate, or a key that does not belong to the certificate.
public struct TLSFilesError: Error, Sendable, CustomStringConvertible {
    /// The file at fault (the certificate's when the pair does not match).
    public var path: String
    /// What is wrong, naming the file.
    public var message: String

    /// Creates an error.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// The server's TLS context, replaced whole by ``reload(logger:)``: each new connection takes
/// the context current when it is accepted and keeps it, so a reload never touches a
/// connection already open.
public final class ServerTLS: Sendable {
    /// The files it loads.
    public let files: TLSFiles
    private let current: Mutex<Loaded>

    private struct Loaded: Sendable {
        var context: NIOSSLContext
        var summary: String
    }

    /// Loads `files` once.
    /// - Throws: ``TLSFilesError`` naming the file at fault.
    public init(files: TLSFiles) throws(TLSFilesError) {
        self.files = files
        current = Mutex(try Self.load(files))
    }

    /// The loaded certificate for logs: its subject, serial number and expiry.
    public var summary: String { current.withLock { $0.summary } }

    /// Loads the files again and serves them to the connections accepted from now on. A
    /// failure leaves the certificate served so far in place and is logged as an error.
    /// - Returns: whether the new files are served.
    @discardableResult
    public func reload(logger: Logger) -> Bool {
        do {
            let loaded = try Self.load(files)
            current.withLock { $0 = loaded }
            logger.notice(
                "TLS certificate reloaded",
                metadata: ["certificate": "\(loaded.summary)", "file": "\(files.certificate)"]
            )
            return true
        } catch {
            logger.error(
                "TLS reload failed; still serving the previous certificate",
                metadata: ["error": "\(error.message)", "certificate": "\(summary)"]
            )
            return false
        }
    }

    /// The context for a connection accepted now.
    var context: NIOSSLContext { current.withLock { $0.context } }

    /// The largest certificate or key file read (a chain is a few kilobytes).
    private static let fileLimit = 1 << 20

    private static func load(_ files: TLSFiles) throws(TLSFilesError) -> Loaded {
        let certificateBytes = try read(files.certificate, what: "TLS certificate")
        let keyBytes = try read(files.key, what: "TLS key")
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(certificateBytes)
        } catch {
            throw TLSFilesError(
                path: files.certificate,
                message: "TLS certificate \(files.certificate) is not a PEM certificate chain"
            )
        }
        guard let leaf = chain.first else {
            throw TLSFilesError(
                path: files.certificate,
                message: "TLS certificate \(files.certificate) holds no PEM certificate"
            )
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
        } catch {
            throw TLSFilesError(
                path: files.key,
                message: "TLS key \(files.key) is not an unencrypted PEM private key"
            )
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        let context: NIOSSLContext
        do {
            // BoringSSL checks here that the key belongs to the certificate.
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSFilesError(
                path: files.certificate,
                message:
                    "TLS key \(files.key) does not match the certificate \(files.certificate) (\(error))"
            )
        }
        return Loaded(context: context, summary: describe(leaf))
    }

    private static func read(_ path: String, what: String) throws(TLSFilesError) -> [UInt8] {
        do {
            return try FileIO.readFile(atPath: path, limit: fileLimit)
        } catch {
            throw TLSFilesError(path: path, message: "\(what) \(path) cannot be read: \(error)")
        }
    }

    /// `subject=… serial=… notAfter=…` of a certificate.
    private static func describe(_ certificate: NIOSSLCertificate) -> String {
        let serial = certificate.serialNumber.map { String(format: "%02X", $0) }.joined()
        let notAfter = Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
        let subject =
            certificate.description.split(separator: ";").first { $0.hasPrefix("common_name=") }
            .map { String($0.dropFirst("common_name=".count)).trimmingCharacters(in: [">"]) }
            ?? "?"
        return "CN=\(subject) serial=\(serial) notAfter=\(notAfter.formatted(.iso8601))"
    }
}

/// A child channel that speaks TLS before `Base` (HTTP/1.1): each new connection gets the
/// ``ServerTLS`` context current when it is accepted, so reloading the certificate changes
/// the connections opened afterwards and leaves the open ones alone. Modelled on
/// HummingbirdTLS's `TLSChannel`, whose context is fixed when the server starts.
struct ReloadableTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let tls: ServerTLS

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let context = tls.context
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension ReloadableTLSChannel: HTTPChannelHandler where Base: HTTPChannelHandler {
    var responder: HTTPChannelHandler.Responder { base.responder }
}
