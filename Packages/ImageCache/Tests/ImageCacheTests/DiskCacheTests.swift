import Foundation
import Testing

@testable import ImageCache

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Disk cache")
struct DiskCacheTests {
    let folder: TemporaryFolder
    init() throws { folder = try TemporaryFolder() }

    func open(
        limit: Int = 1 << 20,
        durability: DiskCache.Durability = .relaxed,
        logger: LogCollector? = nil
    )
        throws -> DiskCache
    {
        try DiskCache(
            directory: folder.url,
            sizeLimit: limit,
            durability: durability,
            logger: logger?.logger ?? quietLogger
        )
    }

    @Test(
        "an entry reads back with its metadata, also from a second instance",
        arguments: [DiskCache.Durability.full, .relaxed]
    )
    func roundTrip(durability: DiskCache.Durability) throws {
        let cache = try open(durability: durability)
        let body = bodyBytes(48 * 1024, seed: 3)
        let key = CacheKey("https://images.example/a.png")
        try cache.store(body, metadata: Data("meta".utf8), forKey: key)
        let entry = try #require(cache.entry(forKey: key))
        #expect(entry.body == body)
        #expect(entry.metadata == Data("meta".utf8))

        let other = try open()
        #expect(other.entry(forKey: key)?.body == body)
        #expect(other.entry(forKey: CacheKey("https://images.example/b.png")) == nil)
        let statistics = try other.statistics()
        #expect(statistics.entryCount == 1)
        #expect(statistics.totalBytes == FolderScan(folder.url).entryBytes)
        #expect(FolderScan(folder.url).temporaryFiles.isEmpty)
    }

    @Test("empty bodies and metadata are entries too")
    func emptyEntry() throws {
        let cache = try open()
        try cache.store(Data(), forKey: CacheKey("empty"))
        let entry = try #require(cache.entry(forKey: CacheKey("empty")))
        #expect(entry.body.isEmpty)
        #expect(entry.metadata.isEmpty)
    }

    @Test("storing a key again replaces its entry and its bytes")
    func replace() throws {
        let cache = try open()
        let key = CacheKey("k")
        try cache.store(bodyBytes(30_000, seed: 1), forKey: key)
        try cache.store(bodyBytes(10_000, seed: 2), forKey: key)
        #expect(cache.entry(forKey: key)?.body == bodyBytes(10_000, seed: 2))
        let statistics = try cache.statistics()
        #expect(statistics.entryCount == 1)
        #expect(statistics.totalBytes == FolderScan(folder.url).entryBytes)
    }

    @Test("the folder never holds more than the limit, checked after every write")
    func hardLimit() throws {
        let limit = 200_000
        let cache = try open(limit: limit)
        var generator = SeededGenerator(seed: 9)
        for index in 0..<300 {
            let size = Int.random(in: 1_000...40_000, using: &generator)
            let key = CacheKey("k\(Int.random(in: 0..<120, using: &generator))")
            try cache.store(bodyBytes(size, seed: UInt64(index)), forKey: key)
            let scan = FolderScan(folder.url)
            #expect(scan.totalBytes <= limit)
            #expect(try cache.statistics().totalBytes == scan.entryBytes)
        }
        #expect(try cache.statistics().entryCount == FolderScan(folder.url).entryFiles.count)
    }

    @Test("an entry larger than the whole limit is refused with entryTooLarge")
    func tooLarge() throws {
        let cache = try open(limit: 10_000)
        #expect {
            try cache.store(bodyBytes(20_000, seed: 1), forKey: CacheKey("big"))
        } throws: { error in
            (error as? ImageCacheError)?.code == .entryTooLarge
        }
        #expect(cache.entry(forKey: CacheKey("big")) == nil)
    }

    @Test("recently read entries outlive older ones when space runs out")
    func leastRecentlyUsed() throws {
        let cache = try open(limit: 100_000)
        for index in 0..<9 {
            try cache.store(bodyBytes(10_000, seed: UInt64(index)), forKey: CacheKey("k\(index)"))
        }
        // Reading k0 makes it the most recently used.
        #expect(cache.entry(forKey: CacheKey("k0")) != nil)
        try cache.store(bodyBytes(25_000, seed: 99), forKey: CacheKey("new"))
        #expect(cache.entry(forKey: CacheKey("k0")) != nil)
        #expect(cache.entry(forKey: CacheKey("k1")) == nil)
        #expect(cache.entry(forKey: CacheKey("k2")) == nil)
        #expect(cache.entry(forKey: CacheKey("new")) != nil)
    }

    enum Damage: String, CaseIterable, Sendable {
        case flipBodyByte, flipHeaderByte, truncate, appendGarbage, emptyFile, replaceWithText
    }

    @Test(
        "a damaged entry is a miss, is removed, and its bytes leave the count",
        arguments: Damage.allCases
    )
    func corruptEntry(damage: Damage) throws {
        let log = LogCollector()
        let cache = try open(logger: log)
        let key = CacheKey("https://images.example/damaged.png")
        try cache.store(bodyBytes(48 * 1024, seed: 5), metadata: Data("m".utf8), forKey: key)
        try cache.store(bodyBytes(1_000, seed: 6), forKey: CacheKey("other"))
        let scan = FolderScan(folder.url)
        let path = try #require(scan.entryFiles.first { $0.value > 40_000 }?.key)
        let file = folder.url.appendingPathComponent(path)
        var bytes = try Data(contentsOf: file)
        switch damage {
        case .flipBodyByte: bytes[bytes.count - 100] ^= 0x01
        case .flipHeaderByte: bytes[10] ^= 0x40
        case .truncate: bytes = bytes.prefix(bytes.count / 2)
        case .appendGarbage: bytes += Data("garbage".utf8)
        case .emptyFile: bytes = Data()
        case .replaceWithText: bytes = Data("<html>not an entry</html>".utf8)
        }
        try bytes.write(to: file)

        #expect(cache.entry(forKey: key) == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(log.contains(.warning, "removing a damaged image cache entry"))
        let statistics = try cache.statistics()
        #expect(statistics.entryCount == 1)
        #expect(statistics.totalBytes == FolderScan(folder.url).entryBytes)
        #expect(cache.entry(forKey: CacheKey("other")) != nil)
    }

    @Test("an entry larger than this instance's limit is not read, and not removed")
    func oversizeEntry() throws {
        let large = try open(limit: 1 << 20)
        try large.store(bodyBytes(300_000, seed: 1), forKey: CacheKey("big"))
        let small = try open(limit: 100_000)
        #expect(small.entry(forKey: CacheKey("big")) == nil)
        #expect(large.entry(forKey: CacheKey("big"))?.body.count == 300_000)
    }

    @Test("a lost index is rebuilt from the folder, keeping the entries")
    func lostIndex() throws {
        let cache = try open()
        for index in 0..<20 {
            try cache.store(bodyBytes(5_000, seed: UInt64(index)), forKey: CacheKey("k\(index)"))
        }
        try FileManager.default.removeItem(at: folder.url.appendingPathComponent("index"))
        let log = LogCollector()
        let reopened = try open(logger: log)
        let statistics = try reopened.statistics()
        #expect(statistics.entryCount == 20)
        #expect(statistics.totalBytes == FolderScan(folder.url).entryBytes)
        #expect(reopened.entry(forKey: CacheKey("k7"))?.body == bodyBytes(5_000, seed: 7))
    }

    @Test("a damaged index is rebuilt from the folder", arguments: ["garbage", "", "truncated"])
    func damagedIndex(kind: String) throws {
        let cache = try open()
        for index in 0..<20 {
            try cache.store(bodyBytes(5_000, seed: UInt64(index)), forKey: CacheKey("k\(index)"))
        }
        let index = folder.url.appendingPathComponent("index")
        switch kind {
        case "truncated": try Data(try Data(contentsOf: index).prefix(5_000)).write(to: index)
        default: try Data(kind.utf8).write(to: index)
        }
        let log = LogCollector()
        let reopened = try open(logger: log)
        #expect(try reopened.statistics().entryCount == 20)
        #expect(log.contains(.warning, "rebuilding the image cache index"))
        try reopened.store(bodyBytes(5_000, seed: 100), forKey: CacheKey("after"))
        #expect(try reopened.statistics().entryCount == 21)
    }

    @Test("a writer that stopped mid-update leaves counts that the next writer recounts")
    func dirtyMarker() throws {
        let cache = try open()
        for index in 0..<10 {
            try cache.store(bodyBytes(3_000, seed: UInt64(index)), forKey: CacheKey("k\(index)"))
        }
        // Forge what a crash between a slot write and the header write leaves: the pid
        // mark set and a wrong byte count (the header checksum made valid again).
        let indexURL = folder.url.appendingPathComponent("index")
        var bytes = [UInt8](try Data(contentsOf: indexURL))
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt64(1).littleEndian, toByteOffset: 56, as: UInt64.self)
            raw.storeBytes(of: UInt64(999_999).littleEndian, toByteOffset: 40, as: UInt64.self)
        }
        rewriteIndexChecksum(&bytes)
        try Data(bytes).write(to: indexURL)
        let reopened = try open()
        let statistics = try reopened.statistics()
        #expect(statistics.totalBytes == FolderScan(folder.url).entryBytes)
        #expect(statistics.entryCount == 10)
    }

    @Test("stray temporary files are swept by the first write")
    func strayTemporaries() throws {
        let cache = try open()
        try cache.store(bodyBytes(100, seed: 1), forKey: CacheKey("a"))
        try Data(count: 5_000).write(to: folder.url.appendingPathComponent("tmp/00000000deadbeef"))
        let reopened = try open()
        try reopened.store(bodyBytes(100, seed: 2), forKey: CacheKey("b"))
        #expect(FolderScan(folder.url).temporaryFiles.isEmpty)
    }

    @Test("removeEntry and removeAll remove files and counts")
    func removal() throws {
        let cache = try open()
        for index in 0..<10 {
            try cache.store(bodyBytes(2_000, seed: UInt64(index)), forKey: CacheKey("k\(index)"))
        }
        try cache.removeEntry(forKey: CacheKey("k3"))
        #expect(cache.entry(forKey: CacheKey("k3")) == nil)
        #expect(try cache.statistics().entryCount == 9)
        try cache.removeAll()
        #expect(try cache.statistics().entryCount == 0)
        #expect(try cache.statistics().totalBytes == 0)
        #expect(FolderScan(folder.url).entryFiles.isEmpty)
        try cache.store(bodyBytes(2_000, seed: 1), forKey: CacheKey("k1"))
        #expect(cache.entry(forKey: CacheKey("k1")) != nil)
    }

    @Test("a size limit below 4096 bytes is refused")
    func invalidConfiguration() {
        #expect {
            try DiskCache(directory: folder.url, sizeLimit: 100, logger: quietLogger)
        } throws: { ($0 as? ImageCacheError)?.code == .invalidConfiguration }
    }

    @Test("the index grows past its first table and keeps every entry")
    func growth() throws {
        let cache = try open(limit: 1 << 30)
        for index in 0..<3_000 {
            try cache.store(Data("v\(index)".utf8), forKey: CacheKey("k\(index)"))
        }
        let statistics = try cache.statistics()
        #expect(statistics.entryCount == 3_000)
        for index in stride(from: 0, to: 3_000, by: 97) {
            #expect(cache.entry(forKey: CacheKey("k\(index)"))?.body == Data("v\(index)".utf8))
        }
        let reopened = try open(limit: 1 << 30)
        #expect(try reopened.statistics().entryCount == 3_000)
    }

    @Test("threads storing and reading at once keep entries whole and the count right")
    func concurrentThreads() async throws {
        let cache = try open(limit: 300_000)
        await withTaskGroup(of: Int.self) { group in
            for worker in 0..<6 {
                group.addTask {
                    var generator = SeededGenerator(seed: UInt64(worker + 100))
                    var wrong = 0
                    for _ in 0..<150 {
                        let number = Int.random(in: 0..<60, using: &generator)
                        let key = CacheKey("k\(number)")
                        if let entry = cache.entry(forKey: key) {
                            if entry.body != bodyBytes(number * 100 + 500, seed: UInt64(number)) {
                                wrong += 1
                            }
                        } else {
                            try? cache.store(
                                bodyBytes(number * 100 + 500, seed: UInt64(number)),
                                forKey: key
                            )
                        }
                    }
                    return wrong
                }
            }
            var wrong = 0
            for await count in group { wrong += count }
            #expect(wrong == 0)
        }
        let scan = FolderScan(folder.url)
        #expect(scan.totalBytes <= 300_000)
        #expect(try cache.statistics().totalBytes == scan.entryBytes)
    }
}

/// Recomputes the index header's checksum after a test edits it.
func rewriteIndexChecksum(_ bytes: inout [UInt8]) {
    let checksumOffset = 128 + 64 * 32
    let checksum = bytes[0..<checksumOffset].withUnsafeBytes { XXHash64.hash($0) }
    bytes.withUnsafeMutableBytes {
        $0.storeBytes(of: checksum.littleEndian, toByteOffset: checksumOffset, as: UInt64.self)
    }
}
