// The floor of store-server-load.sh: what Hummingbird alone achieves on this machine. One
// route answers a short body; the sign-in route answers a fixed token and signing key, so
// the load generator signs every request exactly as it does against store-server (the
// signature is ignored here) and the two runs cost the generator the same.
//
// Usage: HelloFloor [PORT]   (0 or none: any free port). Prints "listening on URL" once the
// socket listens, like store-server; stops on SIGTERM or SIGINT.
import Foundation
import Hummingbird
import Logging

let arguments = CommandLine.arguments
guard arguments.count <= 2, let port = arguments.count == 2 ? Int(arguments[1]) : 0,
    (0...65535).contains(port)
else {
    FileHandle.standardError.write(Data("usage: HelloFloor [PORT]\n".utf8))
    exit(64)
}

let router = Router()
router.get("/hello") { _, _ in "hello\n" }
router.get("/health") { _, _ in #"{"status":"ok"}"# }
router.post("/v1/auth/token") { _, _ in
    // A fixed 32-byte key: the generator only needs one to sign with.
    let key = Data(repeating: 7, count: 32).base64EncodedString()
    return #"{"access_token":"floor","signing_key_id":"floor","signing_key":"\#(key)"}"#
}
var logger = Logger(label: "HelloFloor")
logger.logLevel = .warning
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        let url = "http://127.0.0.1:\(channel.localAddress?.port ?? 0)"
        FileHandle.standardOutput.write(Data("listening on \(url)\n".utf8))
    },
    logger: logger
)
try await app.runService()
