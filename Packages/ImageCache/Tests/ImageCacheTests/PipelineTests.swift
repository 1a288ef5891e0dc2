import Foundation
import Synchronization
import Testing

@testable import ImageCache

/// Images served by the test server: 48 KB PNG-like files with the headers a test chooses.
final class ImageSite: Sendable {
    struct Image: Sendable {
        var body: Data
        var headers: [String: String]
    }

    private final class Content: Sendable {
        let images = Mutex<[String: Image]>([:])
        let gates = Mutex<[String: Gate]>([:])
    }

    private let content = Content()
    let server: TestHTTPServer

    init() throws {
        let content = self.content
        server = try TestHTTPServer { request in
            guard let image = content.images.withLock({ $0[request.path] }) else {
                return .respond(.init(status: 404, body: Data("no such image".utf8)))
            }
            if let tag = image.headers["ETag"], request.headers["if-none-match"] == tag {
                return .respond(
                    .init(status: 304, headers: image.headers.filter { $0.key != "Content-Type" })
                )
            }
            if let modified = image.headers["Last-Modified"],
                request.headers["if-modified-since"] == modified,
                image.headers["ETag"] == nil
            {
                return .respond(.init(status: 304, headers: image.headers))
            }
            let response = TestHTTPServer.Response(
                status: 200,
                headers: image.headers,
                body: image.body
            )
            if let gate = content.gates.withLock({ $0[request.path] }) {
                return .hold(gate, response)
            }
            return .respond(response)
        }
    }

    /// Serves a 48 KB image at `path` with `headers`; returns its URL.
    @discardableResult
    func add(
        _ path: String,
        width: UInt32 = 640,
        height: UInt32 = 480,
        headers: [String: String] = ["Cache-Control": "max-age=3600", "ETag": "\"v1\""],
        seed: UInt64 = 1
    ) -> URL {
        var headers = headers
        headers["Content-Type"] = "image/png"
        content.images.withLock {
            $0[path] = Image(
                body: pngImage(width: width, height: height, seed: seed),
                headers: headers
            )
        }
        return server.url(path)
    }

    func setStatus(_ path: String, body: Data) {
        content.images.withLock { $0[path]?.body = body }
    }

    /// Holds answers for `path` until the returned gate opens.
    func hold(_ path: String) -> Gate {
        let gate = Gate()
        content.gates.withLock { $0[path] = gate }
        return gate
    }

    func count(_ path: String) -> Int { server.log.count(path) }
}

@Suite("Image pipeline over a real HTTP server")
struct PipelineTests {
    let folder: TemporaryFolder
    let site: ImageSite
    let clock = TestClock()

    init() throws {
        folder = try TemporaryFolder()
        site = try ImageSite()
    }

    func pipeline(
        disk: Bool = true,
        downloads: Int = 6,
        decoder: PNGHeaderDecoder = PNGHeaderDecoder()
    ) throws -> ImagePipeline<PNGInfo> {
        let clock = self.clock
        return ImagePipeline(
            // Held answers wait for a test's gate: on a loaded machine (every suite in one
            // process on two cores) the test may resume after the 30 s default idle timeout,
            // which would end the held download, not the behaviour under test.
            transport: PlainTransport(timeout: .seconds(600)),
            decoder: decoder,
            diskCache: disk
                ? try DiskCache(
                    directory: folder.url,
                    sizeLimit: 10 << 20,
                    durability: .relaxed,
                    logger: quietLogger
                )
                : nil,
            configuration: .init(maximumConcurrentDownloads: downloads, clock: { clock.now() }),
            logger: quietLogger
        )
    }

    @Test("100 concurrent requests for one image make one server request and one decode")
    func coalescing() async throws {
        let url = site.add("/products/1.png", width: 800, height: 600)
        let gate = site.hold("/products/1.png")
        let decoder = PNGHeaderDecoder()
        let pipeline = try pipeline(decoder: decoder)
        try await withThrowingTaskGroup(of: ImageResponse<PNGInfo>.self) { group in
            for _ in 0..<100 {
                group.addTask { try await pipeline.image(for: ImageRequest(url: url)) }
            }
            // All 100 are waiting on the one download the server holds.
            #expect(await site.server.waitUntil { $0.count("/products/1.png") == 1 })
            gate.open()
            var count = 0
            for try await response in group {
                #expect(response.image == PNGInfo(width: 800, height: 600, byteCount: 48 * 1024))
                #expect(response.source == .network)
                count += 1
            }
            #expect(count == 100)
        }
        #expect(site.count("/products/1.png") == 1)
        #expect(decoder.decodes.count == 1)
        #expect(pipeline.statistics.transportRequests == 1)
        // Then memory.
        let again = try await pipeline.image(for: ImageRequest(url: url))
        #expect(again.source == .memory)
        #expect(site.count("/products/1.png") == 1)
    }

    @Test("many images requested many times each are each downloaded once")
    func stress() async throws {
        let urls = (0..<20).map {
            site.add("/stress/\($0).png", width: UInt32(100 + $0), seed: UInt64($0))
        }
        let pipeline = try pipeline(downloads: 4)
        try await withThrowingTaskGroup(of: (Int, PNGInfo).self) { group in
            for round in 0..<15 {
                for (index, url) in urls.enumerated() {
                    let priority = ImageRequest.Priority.allCases[(round + index) % 5]
                    group.addTask {
                        (
                            index,
                            try await pipeline.image(
                                for: ImageRequest(url: url, priority: priority)
                            ).image
                        )
                    }
                }
            }
            for try await (index, image) in group { #expect(image.width == 100 + index) }
        }
        for index in 0..<20 { #expect(site.count("/stress/\(index).png") == 1) }
    }

    @Test("a fresh copy on disk is served by a new pipeline without network")
    func diskHit() async throws {
        let url = site.add("/a.png")
        let first = try await pipeline().image(for: ImageRequest(url: url))
        #expect(first.source == .network)
        let second = try await pipeline().image(for: ImageRequest(url: url))
        #expect(second.source == .disk)
        #expect(!second.isStale)
        #expect(second.image == first.image)
        #expect(site.count("/a.png") == 1)
    }

    @Test("a stale copy is revalidated with If-None-Match, and the 304 keeps it fresh again")
    func revalidationWithETag() async throws {
        let url = site.add(
            "/etag.png",
            headers: ["Cache-Control": "max-age=60", "ETag": "\"abc\""]
        )
        _ = try await pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 120)
        let pipeline = try pipeline()
        let revalidated = try await pipeline.image(for: ImageRequest(url: url))
        #expect(revalidated.source == .revalidated)
        #expect(!revalidated.isStale)
        #expect(revalidated.image.width == 640)
        let requests = site.server.log.requests.filter { $0.path == "/etag.png" }
        #expect(requests.count == 2)
        #expect(requests.first?.headers["if-none-match"] == nil)
        #expect(requests.last?.headers["if-none-match"] == "\"abc\"")
        // The 304 restarted freshness: the next request, from another pipeline, needs no network.
        let fresh = try await self.pipeline().image(for: ImageRequest(url: url))
        #expect(fresh.source == .disk)
        #expect(site.count("/etag.png") == 2)
    }

    @Test("without an ETag, Last-Modified revalidates with If-Modified-Since")
    func revalidationWithLastModified() async throws {
        let modified = "Sun, 06 Nov 1994 08:49:37 GMT"
        let url = site.add(
            "/lm.png",
            headers: ["Cache-Control": "max-age=10", "Last-Modified": modified]
        )
        _ = try await pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 60)
        let response = try await pipeline().image(for: ImageRequest(url: url))
        #expect(response.source == .revalidated)
        #expect(site.server.log.requests.last?.headers["if-modified-since"] == modified)
    }

    @Test("a changed image replaces the stale copy")
    func changedImage() async throws {
        let url = site.add(
            "/changing.png",
            width: 10,
            headers: ["Cache-Control": "max-age=60", "ETag": "\"1\""]
        )
        _ = try await pipeline().image(for: ImageRequest(url: url))
        site.add(
            "/changing.png",
            width: 20,
            headers: ["Cache-Control": "max-age=60", "ETag": "\"2\""]
        )
        clock.advance(by: 120)
        let response = try await pipeline().image(for: ImageRequest(url: url))
        #expect(response.source == .network)
        #expect(response.image.width == 20)
        #expect(try await pipeline().image(for: ImageRequest(url: url)).image.width == 20)
    }

    @Test("offline, a stale copy is served and says it is stale")
    func offlineStale() async throws {
        let url = site.add(
            "/offline.png",
            headers: ["Cache-Control": "max-age=60", "ETag": "\"x\""]
        )
        _ = try await pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 3_600)
        site.server.stop()
        let response = try await pipeline().image(for: ImageRequest(url: url))
        #expect(response.isStale)
        #expect(response.source == .disk)
        #expect(response.staleReason?.code == .transportFailed)
        #expect(response.image.width == 640)
        let data = try await pipeline().data(for: ImageRequest(url: url))
        #expect(data.isStale)
        #expect(data.data == pngImage(width: 640, height: 480))
    }

    @Test("offline with nothing cached is a transportFailed error")
    func offlineNothingCached() async throws {
        let url = site.add("/never.png")
        site.server.stop()
        await #expect {
            try await pipeline().image(for: ImageRequest(url: url))
        } throws: { error in
            (error as? ImageCacheError)?.code == .transportFailed
                && (error as? ImageCacheError)?.cause != nil
        }
    }

    @Test(
        "a stale copy whose response forbids it is not served offline",
        arguments: ["max-age=60, must-revalidate", "no-cache"]
    )
    func offlineForbidden(cacheControl: String) async throws {
        let url = site.add(
            "/strict.png",
            headers: ["Cache-Control": cacheControl, "ETag": "\"s\""]
        )
        _ = try await pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 3_600)
        site.server.stop()
        await #expect {
            try await pipeline().image(for: ImageRequest(url: url))
        } throws: { error in
            let error = error as? ImageCacheError
            return error?.code == .transportFailed && error?.message.contains("forbids") == true
        }
    }

    @Test("a server error while stale serves the stale copy; a 404 is an error")
    func serverErrors() async throws {
        let url = site.add("/flaky.png", headers: ["Cache-Control": "max-age=1", "ETag": "\"f\""])
        _ = try await pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 60)
        site.server.setHandler { _ in .respond(.init(status: 503)) }
        let stale = try await pipeline().image(for: ImageRequest(url: url))
        #expect(stale.isStale)
        #expect(stale.staleReason?.status == 503)
        await #expect {
            try await pipeline().image(for: ImageRequest(url: site.server.url("/missing.png")))
        } throws: { error in
            (error as? ImageCacheError)?.code == .httpStatus
                && (error as? ImageCacheError)?.status == 503
        }
        site.server.setHandler { _ in .respond(.init(status: 404)) }
        await #expect {
            try await pipeline().image(for: ImageRequest(url: site.server.url("/missing.png")))
        } throws: { error in
            (error as? ImageCacheError)?.status == 404
        }
    }

    @Test("a connection dropped mid-body is a failure, and nothing partial is kept")
    func droppedConnection() async throws {
        let url = site.add("/cut.png")
        let full = pngImage(width: 640, height: 480)
        site.server.setHandler { _ in
            .cutShort(
                .init(status: 200, headers: ["Cache-Control": "max-age=60"], body: full),
                bytes: 10_000
            )
        }
        let pipeline = try pipeline()
        await #expect {
            try await pipeline.image(for: ImageRequest(url: url))
        } throws: { ($0 as? ImageCacheError)?.code == .transportFailed }
        #expect(try pipeline.diskCache?.statistics().entryCount == 0)
        #expect(pipeline.cachedImage(for: url) == nil)

        // With a stale copy on disk, the same failure serves it, marked stale.
        site.server.setHandler { _ in
            .respond(
                .init(
                    status: 200,
                    headers: ["Cache-Control": "max-age=60", "ETag": "\"1\""],
                    body: full
                )
            )
        }
        _ = try await self.pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 120)
        site.server.setHandler { _ in
            .cutShort(
                .init(status: 200, headers: ["Cache-Control": "max-age=60"], body: full),
                bytes: 10_000
            )
        }
        let stale = try await self.pipeline().image(for: ImageRequest(url: url))
        #expect(stale.isStale)
        #expect(stale.image.byteCount == full.count)
    }

    @Test("no-store responses are kept neither on disk nor in memory")
    func noStore() async throws {
        let url = site.add("/private.png", headers: ["Cache-Control": "no-store"])
        let pipeline = try pipeline()
        _ = try await pipeline.image(for: ImageRequest(url: url))
        _ = try await pipeline.image(for: ImageRequest(url: url))
        #expect(site.count("/private.png") == 2)
        #expect(try pipeline.diskCache?.statistics().entryCount == 0)
    }

    @Test("cache-only requests answer from the cache or say notCached")
    func cacheOnly() async throws {
        let url = site.add("/only.png", headers: ["Cache-Control": "max-age=1"])
        await #expect {
            try await pipeline().image(
                for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad)
            )
        } throws: { ($0 as? ImageCacheError)?.code == .notCached }
        _ = try await pipeline().image(for: ImageRequest(url: url))
        clock.advance(by: 60)
        let cached = try await pipeline().image(
            for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad)
        )
        #expect(cached.isStale)
        #expect(cached.staleReason == nil)
        #expect(site.count("/only.png") == 1)
    }

    @Test("a damaged disk copy is downloaded again")
    func damagedDiskCopy() async throws {
        let url = site.add("/damaged.png")
        _ = try await pipeline().image(for: ImageRequest(url: url))
        let scan = FolderScan(folder.url)
        let path = try #require(scan.entryFiles.keys.first)
        let file = folder.url.appendingPathComponent(path)
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: file)
        let response = try await pipeline().image(for: ImageRequest(url: url))
        #expect(response.source == .network)
        #expect(site.count("/damaged.png") == 2)
    }

    @Test("bytes the decoder refuses are a decodingFailed error and are not kept")
    func decodingFailure() async throws {
        let url = site.add("/broken.png")
        site.setStatus("/broken.png", body: Data("<html>oops</html>".utf8))
        let pipeline = try pipeline()
        await #expect {
            try await pipeline.image(for: ImageRequest(url: url))
        } throws: { ($0 as? ImageCacheError)?.code == .decodingFailed }
        #expect(pipeline.cachedImage(for: url) == nil)
    }

    @Test("cancelling one of two requesters leaves the download running for the other")
    func partialCancellation() async throws {
        let url = site.add("/slow.png")
        let gate = site.hold("/slow.png")
        let pipeline = try pipeline()
        let first = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        let second = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        #expect(await site.server.waitUntil { $0.count("/slow.png") == 1 })
        first.cancel()
        await #expect {
            try await first.value
        } throws: { ($0 as? ImageCacheError)?.code == .cancelled }
        gate.open()
        let response = try await second.value
        #expect(response.image.width == 640)
        #expect(site.server.log.aborted.isEmpty)
        #expect(site.count("/slow.png") == 1)
    }

    @Test("when every requester cancels, the download itself is cancelled")
    func fullCancellation() async throws {
        let url = site.add("/abandoned.png")
        _ = site.hold("/abandoned.png")
        let pipeline = try pipeline()
        let tasks = (0..<3).map { _ in
            Task { try await pipeline.image(for: ImageRequest(url: url)) }
        }
        #expect(await site.server.waitUntil { $0.count("/abandoned.png") == 1 })
        for task in tasks { task.cancel() }
        for task in tasks {
            await #expect {
                try await task.value
            } throws: { ($0 as? ImageCacheError)?.code == .cancelled }
        }
        // The server sees the client close the connection of the held request.
        #expect(await site.server.waitUntil { $0.aborted.contains("/abandoned.png") })
        // A new request starts a new download.
        site.add("/abandoned.png")
        site.server.setHandler { _ in
            .respond(
                .init(
                    status: 200,
                    headers: ["Cache-Control": "max-age=60"],
                    body: pngImage(width: 1, height: 1)
                )
            )
        }
        #expect(try await pipeline.image(for: ImageRequest(url: url)).image.width == 1)
    }

    /// A pipeline with one download slot, taken by a download the server holds until the
    /// returned gate opens.
    private func blockedPipeline() async throws -> (
        ImagePipeline<PNGInfo>, Gate, Task<ImageResponse<PNGInfo>, any Error>
    ) {
        let blocker = site.add("/blocker.png")
        let gate = site.hold("/blocker.png")
        let pipeline = try pipeline(downloads: 1)
        let blocking = Task { try await pipeline.image(for: ImageRequest(url: blocker)) }
        #expect(await site.server.waitUntil { $0.count("/blocker.png") == 1 })
        return (pipeline, gate, blocking)
    }

    @Test("with one download slot, waiting requests start by priority")
    func priorities() async throws {
        let low = site.add("/low.png")
        let high = site.add("/high.png")
        let (pipeline, gate, first) = try await blockedPipeline()
        let lowTask = Task { try await pipeline.image(for: ImageRequest(url: low, priority: .low)) }
        // The low request is queued before the high one arrives.
        #expect(await until { pipeline.queuedDownloads == 1 })
        let highTask = Task {
            try await pipeline.image(for: ImageRequest(url: high, priority: .high))
        }
        #expect(await until { pipeline.queuedDownloads == 2 })
        gate.open()
        _ = try await first.value
        _ = try await lowTask.value
        _ = try await highTask.value
        let order = site.server.log.requests.map(\.path)
        #expect(order == ["/blocker.png", "/high.png", "/low.png"])
    }

    @Test("a queued download moves up when a more urgent requester joins it")
    func priorityRaised() async throws {
        let first = site.add("/first.png")
        let second = site.add("/second.png")
        let (pipeline, gate, blocking) = try await blockedPipeline()
        let firstTask = Task {
            try await pipeline.image(for: ImageRequest(url: first, priority: .normal))
        }
        #expect(await until { pipeline.queuedDownloads == 1 })
        let secondLow = Task {
            try await pipeline.image(for: ImageRequest(url: second, priority: .low))
        }
        #expect(await until { pipeline.queuedDownloads == 2 })
        // A second, urgent requester for the low one raises the shared download.
        let secondHigh = Task {
            try await pipeline.image(for: ImageRequest(url: second, priority: .veryHigh))
        }
        #expect(
            await until { pipeline.downloadPriority(for: ImageRequest(url: second)) == .veryHigh }
        )
        gate.open()
        for task in [blocking, firstTask, secondLow, secondHigh] { _ = try await task.value }
        let order = site.server.log.requests.map(\.path)
        #expect(order == ["/blocker.png", "/second.png", "/first.png"])
    }

    @Test("a request joining a prefetch raises its priority and shares its download")
    func prefetchThenRequest() async throws {
        let url = site.add("/prefetched.png")
        let gate = site.hold("/prefetched.png")
        let pipeline = try pipeline()
        pipeline.startPrefetching([ImageRequest(url: url)])
        #expect(await site.server.waitUntil { $0.count("/prefetched.png") == 1 })
        #expect(pipeline.downloadPriority(for: ImageRequest(url: url)) == .low)
        let request = Task {
            try await pipeline.image(for: ImageRequest(url: url, priority: .high))
        }
        #expect(await until { pipeline.downloadPriority(for: ImageRequest(url: url)) == .high })
        gate.open()
        #expect(try await request.value.source == .network)
        #expect(site.count("/prefetched.png") == 1)
    }

    @Test("stopping a prefetch cancels its download")
    func stopPrefetch() async throws {
        let url = site.add("/stopped.png")
        _ = site.hold("/stopped.png")
        let pipeline = try pipeline()
        pipeline.startPrefetching([ImageRequest(url: url)])
        #expect(await site.server.waitUntil { $0.count("/stopped.png") == 1 })
        pipeline.stopPrefetching([ImageRequest(url: url)])
        #expect(await site.server.waitUntil { $0.aborted.contains("/stopped.png") })
    }

    @Test("prefetch fills the disk cache, reports progress, and a second run needs no network")
    func prefetchAll() async throws {
        let requests = (0..<12).map {
            ImageRequest(url: site.add("/catalog/\($0).png", seed: UInt64($0)))
        }
        let progress = ProgressLog()
        let summary = try await pipeline().prefetch(requests, maximumConcurrent: 3) { done, total in
            #expect(total == 12)
            progress.values.withLock { $0.append(done) }
        }
        #expect(summary.loaded == 12)
        #expect(summary.failures.isEmpty)
        #expect(progress.values.withLock { $0 } == Array(1...12))
        let again = try await pipeline().prefetch(requests)
        #expect(again.alreadyCached == 12)
        #expect(site.server.log.requests.count == 12)
        let image = try await pipeline().image(for: requests[5])
        #expect(image.source == .disk)
    }

    @Test("a memory-only pipeline still coalesces and caches")
    func memoryOnly() async throws {
        let url = site.add("/memory.png")
        let pipeline = try pipeline(disk: false)
        #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .network)
        #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .memory)
        #expect(pipeline.memoryCache.totalCost == 640 * 480 * 4)
        try pipeline.removeCachedImage(for: url)
        #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .network)
    }
}

/// Waits until `condition` holds; false after 20 seconds. It suspends between checks rather
/// than spinning, so the downloads it waits for get the cores it would otherwise burn.
func until(_ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(20)
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

final class ProgressLog: Sendable {
    let values = Mutex<[Int]>([])
}
