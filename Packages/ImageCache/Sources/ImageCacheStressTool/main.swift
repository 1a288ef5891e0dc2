// A second process for the disk cache's multi-process tests: stores and reads random entries
// in a shared cache folder and checks every entry it reads.
//
//   ImageCacheStressTool DIR LIMIT WRITES KEYS MIN_SIZE MAX_SIZE [full|relaxed]
//
// WRITES < 0 writes until killed. Prints `committed N` after each store and
// `done writes=N reads=N hits=N busy=N` at the end; exits 1 if an entry read back was wrong.
import Foundation
import ImageCache
import Logging

/// The body of `key` at `size` bytes: a pattern any reader can check.
func expectedBody(key: Int, size: Int) -> Data {
    Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ key &* 7 &+ size) })
}

let arguments = CommandLine.arguments
guard arguments.count >= 7, let limit = Int(arguments[2]), let writes = Int(arguments[3]),
    let keys = Int(arguments[4]), let minSize = Int(arguments[5]), let maxSize = Int(arguments[6]),
    keys > 0, minSize > 0, maxSize >= minSize
else {
    FileHandle.standardError.write(
        Data(
            "usage: ImageCacheStressTool DIR LIMIT WRITES KEYS MIN_SIZE MAX_SIZE [full|relaxed]\n"
                .utf8
        )
    )
    exit(64)
}
let durability: DiskCache.Durability =
    arguments.count > 7 && arguments[7] == "relaxed" ? .relaxed : .full

/// Writes a line to stdout at once (the parent reads each line as it comes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let cache: DiskCache
do {
    cache = try DiskCache(
        directory: URL(fileURLWithPath: arguments[1]),
        sizeLimit: limit,
        durability: durability,
        logger: Logger(label: "stress") { _ in SwiftLogNoOpLogHandler() }
    )
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}

var written = 0
var reads = 0
var hits = 0
var busy = 0
var wrong = 0
while writes < 0 || written < writes {
    let key = Int.random(in: 0..<keys)
    let cacheKey = CacheKey("https://images.example/\(key).png")
    if let entry = cache.entry(forKey: cacheKey) {
        hits += 1
        if entry.body != expectedBody(key: key, size: entry.body.count) {
            wrong += 1
            FileHandle.standardError.write(Data("error: entry \(key) read back wrong\n".utf8))
        }
    }
    reads += 1
    let size = Int.random(in: minSize...maxSize)
    do {
        try cache.store(expectedBody(key: key, size: size), forKey: cacheKey)
        written += 1
        say("committed \(written)")
    } catch  where error.code == .cacheBusy {
        busy += 1
        written += 1
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        exit(1)
    }
}
say("done writes=\(written) reads=\(reads) hits=\(hits) busy=\(busy)")
exit(wrong == 0 ? 0 : 1)
