internal import Foundation
internal import PostgresKit

/// What went wrong talking to PostgreSQL, in words an administrator can act on. PostgresNIO's
/// own description hides everything ("Generic description to prevent accidental leakage");
/// this names the cause from the error's code and SQLSTATE only, never the URL's password or
/// the query.
enum PostgresFailure {
    /// The reason for `error`, or nil when it is not a PostgreSQL error.
    static func reason(_ error: any Error) -> String? {
        guard let failure = error as? PSQLError else { return nil }
        switch failure.code {
        case .sslUnsupported:
            return
                "the PostgreSQL server does not offer TLS, which a connection to another host requires (?sslmode=disable in the URL turns TLS off, on a trusted network only)"
        case .failedToAddSSLHandler:
            return "TLS to the PostgreSQL server could not be set up"
        case .connectionError:
            let underlying = failure.underlying.map { String(describing: $0).prefix(200) } ?? ""
            if underlying.lowercased().contains("certificate") || underlying.contains("SSL") {
                return
                    "the PostgreSQL server's certificate is not trusted or does not name the host (install its CA with update-ca-certificates): \(underlying)"
            }
            return "the PostgreSQL server cannot be reached: \(underlying)"
        case .serverClosedConnection:
            return "the PostgreSQL server closed the connection"
        case .server:
            let state = failure.serverInfo?[.sqlState] ?? ""
            switch state {
            case "28P01":
                return "authentication failed: the password for the URL's user is wrong"
            case "28000":
                return
                    "authentication failed: the server does not accept this user from this host (pg_hba.conf)"
            case "3D000":
                return "no such database: \(failure.serverInfo?[.message] ?? state)"
            case "42501":
                return "permission denied: \(failure.serverInfo?[.message] ?? state)"
            case "53300":
                return "the PostgreSQL server has no connection slots left"
            case "57P03":
                return "the PostgreSQL server is starting up or shutting down"
            default:
                return "the PostgreSQL server refused (SQLSTATE \(state))"
            }
        default:
            return "PostgreSQL error \(failure.code)"
        }
    }
}
