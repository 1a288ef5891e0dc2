import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real `store-server` binary as a child process on a SQLite file, with the demo data,
/// on port 0 (or a given port, for a restart), as a user would run it.
final class StoreServerProcess: @unchecked Sendable {
    // Safe: the process and its pipe are set up in init and only used by the test that owns
    // this instance, one call at a time.
    let process: Process
    let port: Int
    let database: URL
    let log: URL

    var url: String { "http://127.0.0.1:\(port)" }

    /// Starts the server and waits (up to `timeout` seconds) for its `listening on` line.
    init(database: URL, port: Int = 0, timeout: Double = 120) throws {
        self.database = database
        log = database.deletingPathExtension().appendingPathExtension("log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = CommandRunner.builtBinary("store-server")
        process.arguments = [
            "serve", "--port", String(port), "--demo-data", "--database", database.path,
            "--insecure-password-cost-for-tests", "--password-cost", "1000",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPFLOOR_HOME"] = database.deletingLastPathComponent().path
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: log)
        try CommandRunner.launch(process)
        self.process = process
        let line = Mutexed<String?>(nil)
        let reader = Thread {
            var bytes: [UInt8] = []
            let handle = out.fileHandleForReading
            while true {
                let chunk = handle.readData(ofLength: 1)
                guard let byte = chunk.first else { break }
                if byte == UInt8(ascii: "\n") { break }
                bytes.append(byte)
            }
            line.value = String(decoding: bytes, as: UTF8.self)
        }
        reader.start()
        let end = Date(timeIntervalSinceNow: timeout)
        while !line.done {
            guard Date() < end, process.isRunning else {
                process.terminate()
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                throw ServerStartError(message: "store-server did not start: \(text.suffix(2000))")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let text = line.value ?? ""
        guard let range = text.range(of: "listening on http://"),
            let found = Int(text[range.upperBound...].split(separator: ":").last ?? "")
        else {
            process.terminate()
            throw ServerStartError(message: "unexpected first line from store-server: \(text)")
        }
        self.port = found
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// Runs a `store-server` admin command on the same database.
    func admin(_ arguments: [String]) throws -> CommandRun {
        try CommandRunner.run(
            CommandRunner.builtBinary("store-server"),
            arguments + ["--database", database.path]
        )
    }

    deinit { stop() }
}

struct ServerStartError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
