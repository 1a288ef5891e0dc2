// A second process for Auth's cross-process tests: sends N concurrent signed GETs with the
// credentials of a token store, then prints `ok <count>` (or `error: <message>`).
// Usage: AuthPeer <server-url> <container-dir> <path> <count>
import Auth
import Foundation
import Logging

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 5, let server = URL(string: arguments[1]), let count = Int(arguments[4])
else {
    FileHandle.standardError.write(
        Data("usage: AuthPeer <server-url> <container-dir> <path> <count>\n".utf8)
    )
    exit(64)
}
let client = AuthClient(
    configuration: AuthClientConfiguration(serverURL: server, deadline: .seconds(30)),
    store: TokenStore(directory: URL(fileURLWithPath: arguments[2])),
    logger: Logger(label: "AuthPeer")
)
let path = arguments[3]
let statuses = await withTaskGroup(of: String.self) { group in
    for _ in 0..<count {
        group.addTask {
            do {
                let (_, response) = try await client.send(URLRequest(url: client.url(path)))
                return "\(response.statusCode)"
            } catch {
                return "\(error)"
            }
        }
    }
    var all: [String] = []
    for await status in group { all.append(status) }
    return all
}
let good = statuses.filter { $0 == "200" }.count
if good == count {
    print("ok \(good)")
} else {
    print("error: \(Set(statuses).sorted().joined(separator: "; "))")
    exit(1)
}
