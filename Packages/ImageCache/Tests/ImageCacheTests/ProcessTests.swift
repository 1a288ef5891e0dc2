import ChildProcesses
import Foundation
import Logging
import Plumbing
import Testing

@testable import ImageCache

#if canImport(Glibc)
    import Glibc
#endif

/// A child process running the stress tool, its output read line by line.
final class StressChild {
    let child: ChildProcess
    private(set) var finished = false
    private(set) var lines: [String] = []

    init(
        folder: URL,
        limit: Int,
        writes: Int,
        keys: Int,
        sizes: ClosedRange<Int>,
        durability: String
    ) async throws {
        child = try await ChildProcess.start(
            stressToolURL,
            [
                folder.path, "\(limit)", "\(writes)", "\(keys)", "\(sizes.lowerBound)",
                "\(sizes.upperBound)",
                durability,
            ],
            stderr: .inherited
        )
    }

    /// Takes the lines written since the last call; returns how many were `committed` lines.
    func takeLines() async -> Int {
        let ended = child.outputEnded
        var commits = 0
        while let line = await child.nextLine(timeout: 0) {
            if line.hasPrefix("committed") { commits += 1 }
            lines.append(line)
        }
        if ended { finished = true }
        return commits
    }

    /// Reads until `committed N` has been printed N ≥ `count` times; false at end of output
    /// or after a minute without one.
    func waitForCommits(_ count: Int) async -> Bool {
        while lines.filter({ $0.hasPrefix("committed") }).count < count {
            guard let line = await child.nextLine(timeout: 60) else { return false }
            lines.append(line)
        }
        return true
    }

    func waitForExit() async -> Int32 {
        while let line = await child.nextLine(timeout: 300) { lines.append(line) }
        finished = true
        return await child.wait().status
    }
}

@Suite("Disk cache across processes", .serialized)
struct ProcessTests {
    @Test(
        "several writer processes never take the folder over its limit",
        arguments: [("relaxed", 150), ("full", 30)]
    )
    func severalWriters(durability: String, writes: Int) async throws {
        let folder = try TemporaryFolder()
        let limit = 400_000
        var children: [StressChild] = []
        for _ in 0..<4 {
            children.append(
                try await StressChild(
                    folder: folder.url,
                    limit: limit,
                    writes: writes,
                    keys: 60,
                    sizes: 5_000...60_000,
                    durability: durability
                )
            )
        }
        // After every batch of commits any child reports, look at the folder under the
        // cache's lock: what the file system holds, not what the index says.
        var largest = 0
        var checks = 0
        var lastReport = ContinuousClock.now
        while children.contains(where: { !$0.finished }) {
            var commits = 0
            for child in children where !child.finished { commits += await child.takeLines() }
            guard commits > 0 else {
                guard ContinuousClock.now - lastReport < .seconds(60) else {
                    Issue.record("the writers stopped reporting for a minute")
                    return
                }
                try await Task.sleep(for: .milliseconds(2))
                continue
            }
            lastReport = ContinuousClock.now
            let total = withCacheLock(folder.url) { FolderScan(folder.url).totalBytes }
            largest = max(largest, total)
            checks += 1
            #expect(total <= limit, "the folder held \(total) bytes, over the \(limit)-byte limit")
        }
        for child in children { #expect(await child.waitForExit() == 0) }
        #expect(checks > 10)
        #expect(largest > limit / 2, "the cache never filled up; the test proves nothing")
        let hits = children.compactMap { child in
            child.lines.last.flatMap { $0.split(separator: " ").first { $0.hasPrefix("hits=") } }
        }
        #expect(hits.count == 4)

        let cache = try DiskCache(
            directory: folder.url,
            sizeLimit: limit,
            durability: .relaxed,
            logger: quietLogger
        )
        let statistics = try cache.statistics()
        let scan = FolderScan(folder.url)
        #expect(scan.temporaryFiles.isEmpty)
        #expect(statistics.totalBytes == scan.entryBytes)
        #expect(statistics.entryCount == scan.entryFiles.count)
        #expect(statistics.reservedBytes == 0)
        for key in 0..<60 {
            if let entry = cache.entry(forKey: CacheKey("https://images.example/\(key).png")) {
                #expect(entry.body.count >= 5_000)
            }
        }
        #expect(try cache.statistics().entryCount == scan.entryFiles.count, "an entry was damaged")
    }

    @Test(
        "a writer killed at any moment leaves no space counted twice or lost",
        arguments: [2, 5, 9]
    )
    func killedWriter(afterCommits: Int) async throws {
        let folder = try TemporaryFolder()
        let limit = 3_000_000
        let child = try await StressChild(
            folder: folder.url,
            limit: limit,
            writes: -1,
            keys: 40,
            sizes: 100_000...400_000,
            durability: "full"
        )
        #expect(await child.waitForCommits(afterCommits))
        _ = await child.child.stop(with: SIGKILL)

        let cache = try DiskCache(
            directory: folder.url,
            sizeLimit: limit,
            durability: .relaxed,
            logger: quietLogger
        )
        try cache.store(Data(count: 1_000), forKey: CacheKey("after the crash"))
        let statistics = try cache.statistics()
        let scan = FolderScan(folder.url)
        #expect(scan.temporaryFiles.isEmpty)
        #expect(statistics.reservedBytes == 0)
        #expect(statistics.totalBytes >= scan.entryBytes, "bytes on disk that nobody counts")
        #expect(statistics.totalBytes == scan.entryBytes)
        #expect(scan.totalBytes <= limit)
    }

    @Test("the reservation of a writer that died mid-write is reclaimed with its temporary file")
    func deadReservation() async throws {
        let folder = try TemporaryFolder()
        let cache = try DiskCache(
            directory: folder.url,
            sizeLimit: 100_000,
            durability: .relaxed,
            logger: quietLogger
        )
        try cache.store(Data(count: 10_000), forKey: CacheKey("a"))

        // A process that has exited: its pid is free.
        let gone = try await ChildProcess.start(URL(fileURLWithPath: "/bin/true"))
        _ = await gone.wait()
        let deadPID = Int64(gone.processIdentifier)

        let indexURL = folder.url.appendingPathComponent("index")
        var page = [UInt8](try Data(contentsOf: indexURL))
        var header = try IndexHeader.decode(Array(page[0..<IndexHeader.pageSize])).get()
        header.reservations[3] = Reservation(
            id: 0xDEAD_BEEF,
            pid: deadPID,
            bytes: 80_000,
            startedAt: POSIX.nowMicroseconds()
        )
        header.reservedBytes += 80_000
        page.replaceSubrange(0..<IndexHeader.pageSize, with: header.encode())
        try Data(page).write(to: indexURL)
        try Data(count: 30_000).write(to: folder.url.appendingPathComponent("tmp/00000000deadbeef"))
        #expect(try cache.statistics().reservedBytes == 80_000)

        // 60,000 bytes fit only once the dead writer's 80,000 are given back.
        try cache.store(Data(count: 60_000), forKey: CacheKey("b"))
        #expect(try cache.statistics().reservedBytes == 0)
        #expect(FolderScan(folder.url).temporaryFiles.isEmpty)
        #expect(cache.entry(forKey: CacheKey("a")) != nil)
        #expect(cache.entry(forKey: CacheKey("b")) != nil)
    }
}
