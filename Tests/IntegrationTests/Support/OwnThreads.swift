import Foundation
import Testing

/// Threads of their own for the integration tests, which wait on child processes
/// synchronously (`waitUntilExit`, pipe reads, `poll`) for seconds at a time.
///
/// On the 2-core CI machine Swift's concurrency pool has 2 threads: two such tests used to
/// hold both, and every async test in the process (the in-process store-server suites) stood
/// still meanwhile, its deadlines measuring the wait. With ``Trait/ownThreads`` a suite's
/// tests run on this executor's 3 threads instead and the pool stays free for the async
/// tests. Measured on 2 cores (2026-11-26): the root package's 143 tests in 131–143 s
/// instead of 150–199 s, the store-server suites done in 12–43 s instead of waiting 140–158 s;
/// 2 threads gave 161–166 s (the child processes mostly wait, so 3 keep the cores busier).
final class IntegrationExecutor: TaskExecutor, @unchecked Sendable {
    // Safe: `jobs` is only touched under `condition`.
    /// The executor every `.ownThreads` suite shares.
    static let shared = IntegrationExecutor(threads: 3)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    /// Starts `threads` worker threads (8 MiB stacks, as a main thread has).
    init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "integration-tests-\(index)"
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs each test of a suite on ``IntegrationExecutor/shared``.
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // Each test case (each argument) in its own scope; the suite itself needs none.
        testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(IntegrationExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// The suite's tests run on threads of their own, off Swift's concurrency pool.
    static var ownThreads: Self { Self() }
}
