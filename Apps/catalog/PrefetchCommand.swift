import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import ImageCache
import Models
import Plumbing
import ProductImages
import SuiteClient
import Synchronization

struct Prefetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Load product images into the shared image cache, for fast and offline use.",
        discussion: """
            Lists the products (all, or those matching --query) and loads each image that is \
            not fresh in the cache, --jobs at a time, with a progress bar on stderr when it \
            is a terminal. The product details are kept too, so `catalog show` answers \
            offline for every product prefetched.

            Interrupted (Ctrl-C, SIGTERM) or stopped by the deadline (600 s unless \
            --deadline says otherwise), it abandons the downloads in flight, keeps every \
            image already loaded, and exits 130/143 (6 for the deadline); running it again \
            loads only the rest.

            Summary: JSON on stdout ({"total", "alreadyCached", "loaded", "failed", \
            "interrupted"}) unless stdout is a terminal; a line on stderr.

            Capacity: --jobs defaults to twice the CPUs this process may use (its \
            affinity, bounded by its cgroup's CPU quota), 4 to 16. While the kernel reports pressure \
            (/proc/pressure: CPU some avg10 at least 80%: half the jobs; memory at least \
            10%: one), fewer images load at once; a warning on stderr says so once.

            Example: catalog prefetch --query kettle
            """
    )

    @Option(name: .long, help: ArgumentHelp("Only products matching this text.", valueName: "text"))
    var query: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Images loaded at once (1…16; default: the CPUs this process may use).",
            valueName: "n"
        )
    )
    var jobs: Int?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if let jobs, !(1...16).contains(jobs) {
            throw ValidationError("--jobs must be 1…16, got \(jobs)")
        }
    }

    /// What a run did, as `--json` prints it.
    struct Summary: Encodable {
        var total: Int
        var alreadyCached: Int
        var loaded: Int
        var failed: Int
        var interrupted: Bool
        var failures: [Failure]

        struct Failure: Encodable {
            var url: String
            var error: String
        }
    }

    func run() async throws {
        // A stop lets the images being written finish and the summary be printed: up to
        // 2 s, not the 90 ms a command that keeps nothing gets.
        StopSignal.allowGrace(.seconds(2))
        try await withClient(options, defaultDeadline: 600) { client, output in
            let products = try await listProducts(client)
            var seen = Set<URL>()
            let urls = products.compactMap { client.imageURL(of: $0) }.filter {
                seen.insert($0).inserted
            }
            let jobs = self.jobs ?? PrefetchCapacity.defaultJobs()
            let cache = try ProductImageCache(
                client: client,
                maximumConcurrentDownloads: jobs,
                logger: options.common.makeLogger(label: "catalog")
            )
            let bar = ProgressLine(
                noun: "images",
                enabled: Console.stderrIsTerminal && !output.quiet
            )
            let requests = urls.map { ImageRequest(url: $0, priority: .low) }
            // The loads run in a task the stop signal does not cancel: on a stop, no new
            // image starts, downloads in flight are abandoned (nothing of theirs is written)
            // and images being written finish, so the command returns with the cache whole.
            let stop = StopRequest()
            let backoff = PrefetchCapacity.backoff(jobs: jobs, count: requests.count, bar: bar)
            // Never throws: `load` does not.
            let result =
                (try? await cache.stoppable(onStop: stop.request) {
                    await Self.load(
                        requests,
                        cache: cache,
                        jobs: jobs,
                        backoff: backoff,
                        stop: stop,
                        bar: bar
                    )
                }) ?? Outcome()
            bar.finish()
            let interrupted = Task.isCancelled
            let failures = result.failures
            let summary = Summary(
                total: urls.count,
                alreadyCached: result.alreadyCached,
                loaded: result.loaded,
                failed: failures.count,
                interrupted: interrupted,
                failures: failures.map {
                    Summary.Failure(
                        url: $0.url.absoluteString,
                        error: ProductImageCache.map($0.error, what: $0.url.path).message
                    )
                }
            )
            if output.json { try output.printJSON(summary) }
            let cached = result.alreadyCached + result.loaded
            if interrupted {
                output.warning(
                    "interrupted: \(cached) of \(urls.count) images are cached (\(result.loaded) loaded now); run `catalog prefetch` again to load the rest"
                )
                throw CancellationError()
            }
            output.note(
                "\(urls.count) images: \(result.loaded) loaded, \(result.alreadyCached) already cached, \(failures.count) failed"
            )
            guard let first = failures.first else { return }
            let errors = failures.map { ProductImageCache.map($0.error, what: $0.url.path) }
            let offline = errors.allSatisfy { $0.code == .offline }
            let firstError = errors[0]
            let notStored = failures.filter { $0.error.code == .ioFailure }.count
            let what =
                notStored == failures.count
                ? "could not be stored in the image cache" : "could not be loaded or stored"
            throw SuiteClientError(
                offline ? .offline : firstError.code == .cancelled ? .server : firstError.code,
                "\(failures.count) of \(urls.count) images \(notStored == 0 ? "could not be loaded" : what) (first: \(first.url.path): \(firstError.message)); \(cached) are cached, and running prefetch again loads the rest"
            )
        }
    }

    /// What the loads did.
    struct Outcome: Sendable {
        var alreadyCached = 0
        var loaded = 0
        var failures: [(url: URL, error: ImageCacheError)] = []
    }

    /// Loads `requests` into the disk cache, `jobs` at a time, until done or `stop` is
    /// requested (then no new one starts and those in flight end as abandoned); fewer at a
    /// time while `backoff` says so.
    static func load(
        _ requests: [ImageRequest],
        cache: ProductImageCache,
        jobs: Int,
        backoff: PressureBackoff? = nil,
        stop: StopRequest,
        bar: ProgressLine
    ) async -> Outcome {
        var outcome = Outcome()
        var done = 0
        var inFlight = 0
        await withTaskGroup(of: (URL, Result<DataResponse, ImageCacheError>).self) { group in
            var pending = requests.makeIterator()
            func startNext() -> Bool {
                guard !stop.isRequested, let request = pending.next() else { return false }
                inFlight += 1
                group.addTask {
                    do throws(ImageCacheError) {
                        return (request.url, .success(try await cache.pipeline.data(for: request)))
                    } catch {
                        return (request.url, .failure(error))
                    }
                }
                return true
            }
            for _ in 0..<min(jobs, backoff?.limit() ?? jobs) where !startNext() { break }
            while let (url, result) = await group.next() {
                inFlight -= 1
                switch result {
                case .success(let response) where response.storeFailure != nil:
                    // Loaded but not kept (a full disk): not prefetched.
                    outcome.failures.append((url, response.storeFailure!))
                case .success(let response) where response.isStale:
                    // Served from the cache because the server could not answer.
                    outcome.failures.append(
                        (
                            url,
                            response.staleReason
                                ?? ImageCacheError(code: .transportFailed, message: "stale")
                        )
                    )
                case .success(let response) where response.source == .disk:
                    outcome.alreadyCached += 1
                case .success:
                    outcome.loaded += 1
                case .failure(let error) where error.code == .cancelled:
                    break  // abandoned on a stop (nothing else cancels these loads)
                case .failure(let error):
                    outcome.failures.append((url, error))
                }
                done += 1
                if !stop.isRequested { bar.update(done: done, total: requests.count) }
                // At least one in flight; up to the jobs the pressure allows.
                let allowed = max(1, min(jobs, backoff?.limit() ?? jobs))
                while inFlight < allowed, startNext() {}
            }
        }
        return outcome
    }

    /// Every product matching the query, page by page (200 at a time), with the forced
    /// update checked on the first page. Kept answers are no use here: offline is an error.
    private func listProducts(_ client: SuiteClient) async throws -> [Product] {
        var request = ProductQuery(text: query, limit: 200)
        var products: [Product] = []
        var first = true
        while true {
            let page: Fetched<Page<Product>>
            if first {
                page = try await client.checkedRead { [request] () throws(SuiteClientError) in
                    try await client.products(request)
                }.value
                first = false
            } else {
                page = try await client.products(request)
            }
            switch page.origin {
            case .server: break
            case .cache(_, let reason), .kept(_, let reason):
                throw SuiteClientError(.offline, "offline: \(reason); nothing can be prefetched")
            }
            products += page.value.items
            guard let next = page.value.nextCursor else { return products }
            request.cursor = next
            try Task.checkCancellation()
        }
    }
}

/// Set once when the command is asked to stop.
final class StopRequest: Sendable {
    private let flag = Mutex(false)
    func request() { flag.withLock { $0 = true } }
    var isRequested: Bool { flag.withLock { $0 } }
}
