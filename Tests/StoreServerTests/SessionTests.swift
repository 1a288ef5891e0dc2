import Auth
import Foundation
import Models
import Testing

@testable import StoreServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 24, point 4: sessions that cannot fork, end for good, and are judged by one clock.
@Suite("sessions", .serialized)
struct SessionTests {
    @Test(
        "a refresh token exchanged twice within the grace gets the same successor pair, never a second chain",
        arguments: DatabaseKind.allCases
    )
    func idempotentRefresh(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind)
        do {
            let token = server.url.appendingPathComponent("v1/auth/token")
            let signIn: TokenResponse = try await PlainHTTP.form(
                token,
                [
                    ("grant_type", "password"), ("username", DemoData.username),
                    ("password", DemoData.password),
                ]
            ).decode()
            let first = try await PlainHTTP.form(
                token,
                [("grant_type", "refresh_token"), ("refresh_token", signIn.refreshToken)]
            )
            let second = try await PlainHTTP.form(
                token,
                [("grant_type", "refresh_token"), ("refresh_token", signIn.refreshToken)]
            )
            #expect(first.status == 200 && second.status == 200, "\(second.text)")
            let a: TokenResponse = try first.decode()
            let b: TokenResponse = try second.decode()
            #expect(a.accessToken == b.accessToken && a.refreshToken == b.refreshToken)
            let admin = try await StoreAdmin.open(
                server.location,
                passwordIterations: testPasswordCost,
                logger: TestDatabases.logger
            )
            let counts = try await admin.sessionCounts(DemoData.username)
            await admin.close()
            #expect(counts.refreshTokens == 2, "one from the sign-in, one successor")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("no session outlives its absolute lifetime", arguments: DatabaseKind.allCases)
    func absoluteLifetime(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind, sessionLifetime: 2)
        do {
            let client = try await server.client()
            #expect(try await client.send("GET", "/v1/me").status == 200)
            try await Task.sleep(for: .milliseconds(2_500))
            await #expect(throws: (any Error).self, "the session ended; signing in is required") {
                _ = try await client.send("GET", "/v1/me")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "the replay window is judged by the database's clock, not the instance's: a server whose clock is 120 s slow refuses a 310 s old signature",
        arguments: DatabaseKind.allCases
    )
    func databaseClock(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind, clockShift: -120)
        do {
            let client = try await server.client()
            let host = "\(server.url.host!):\(server.url.port!)"
            let now = Int64(Date().timeIntervalSince1970)
            for (age, status) in [(Int64(0), 200), (310, 401)] {
                let headers = try RawHTTP.signedHeaders(
                    directory: client.directory,
                    method: "GET",
                    host: host,
                    path: "/v1/me",
                    created: now - age
                )
                let reply = try await RawHTTP.send(
                    port: server.url.port!,
                    method: "GET",
                    path: "/v1/me",
                    host: host,
                    headers: headers
                )
                #expect(reply.status == status, "a signature \(age) s old")
                if status == 401 {
                    #expect(
                        String(decoding: reply.body, as: UTF8.self).contains(
                            AuthProblemType.signatureOutsideWindow
                        )
                    )
                }
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
