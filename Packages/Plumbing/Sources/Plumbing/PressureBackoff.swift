import Foundation
internal import Synchronization

/// The kernel's pressure-stall information (`/proc/pressure/cpu`, `/proc/pressure/memory`):
/// the share of the last 10 s in which at least one task waited for a CPU or for memory
/// (`some avg10`, 0–100). Host-wide on cgroup v1; absent on kernels without PSI.
public struct PressureReading: Sendable, Equatable {
    /// CPU `some avg10`, or nil when the kernel does not report it.
    public var cpu: Double?
    /// Memory `some avg10`, or nil when the kernel does not report it.
    public var memory: Double?

    /// Creates a reading.
    public init(cpu: Double? = nil, memory: Double? = nil) {
        self.cpu = cpu
        self.memory = memory
    }

    /// Reads the files under `root` (`/proc/pressure` unless a test says otherwise).
    public static func read(root: String = "/proc/pressure") -> PressureReading {
        PressureReading(
            cpu: someAverage10(readSmallFile(root + "/cpu")),
            memory: someAverage10(readSmallFile(root + "/memory"))
        )
    }

    /// The `avg10` of a PSI file's `some` line, or nil for absent or garbage text.
    static func someAverage10(_ text: String?) -> Double? {
        guard let text else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("some ") {
            for field in line.split(separator: " ") where field.hasPrefix("avg10=") {
                guard let value = Double(field.dropFirst(6)), value.isFinite,
                    (0...100).contains(value)
                else { return nil }
                return value
            }
        }
        return nil
    }
}

/// How many of a long batch's jobs may run now: all of them, or fewer while the kernel
/// reports CPU or memory pressure (CPU `some avg10` ≥ ``Thresholds/cpu``: half the jobs;
/// memory ≥ ``Thresholds/memory``: one), back to all once the pressure clears.
///
/// Pressure is sampled at most once per ``interval``, by whichever caller asks first.
/// Thread workers call ``acquire()``/``release()`` around each item; async code asks
/// ``limit()`` before starting the next one. The first change is reported once through
/// `report` (the app prints it as a `note:` line), so the user knows why a batch slowed.
public final class PressureBackoff: Sendable {
    /// The pressure at which the batch backs off, in percent of `some avg10`.
    public struct Thresholds: Sendable, Equatable {
        /// CPU: 80 (most of the last 10 s some task waited for a CPU).
        public var cpu: Double
        /// Memory: 10 (reclaim is stalling tasks; more jobs would only add to it).
        public var memory: Double

        /// Creates thresholds.
        public init(cpu: Double = 80, memory: Double = 10) {
            self.cpu = cpu
            self.memory = memory
        }
    }

    /// A change of the allowed jobs, as `report` receives it.
    public struct Change: Sendable, Equatable {
        /// The jobs allowed from now on.
        public var jobs: Int
        /// The jobs asked for.
        public var requested: Int
        /// The reading that caused it.
        public var reading: PressureReading
        /// "CPU" or "memory": what pressure was seen; nil when it cleared.
        public var pressure: String?

        /// The line an app prints, e.g. "CPU pressure (some avg10 93.1%): 1 job instead of 2".
        public var message: String {
            guard let pressure else { return "pressure cleared: \(jobs) jobs again" }
            let value = pressure == "CPU" ? reading.cpu ?? 0 : reading.memory ?? 0
            let figure = String(format: "%.1f", value)
            return
                "\(pressure) pressure (some avg10 \(figure)%): \(jobs) job\(jobs == 1 ? "" : "s") instead of \(requested) until it clears"
        }
    }

    private struct State {
        var limit: Int
        var inFlight = 0
        var lastSample: ContinuousClock.Instant?
        var reported = false
    }

    /// The jobs asked for.
    public let requested: Int
    /// How often pressure is read.
    public let interval: Duration
    private let thresholds: Thresholds
    private let sample: @Sendable () -> PressureReading
    private let report: @Sendable (Change) -> Void
    private let state: Mutex<State>
    private let condition = NSCondition()

    /// Creates a back-off for `jobs` jobs reading PSI from `pressureRoot`.
    /// - Parameters:
    ///   - report: called once, on the first back-off (never on later changes).
    public convenience init(
        jobs: Int,
        pressureRoot: String = "/proc/pressure",
        thresholds: Thresholds = Thresholds(),
        interval: Duration = .seconds(1),
        report: @escaping @Sendable (Change) -> Void = { _ in }
    ) {
        self.init(
            jobs: jobs,
            thresholds: thresholds,
            interval: interval,
            sample: { PressureReading.read(root: pressureRoot) },
            report: report
        )
    }

    /// Creates a back-off sampling pressure with `sample`.
    public init(
        jobs: Int,
        thresholds: Thresholds = Thresholds(),
        interval: Duration = .seconds(1),
        sample: @escaping @Sendable () -> PressureReading,
        report: @escaping @Sendable (Change) -> Void = { _ in }
    ) {
        requested = max(1, jobs)
        self.thresholds = thresholds
        self.interval = interval
        self.sample = sample
        self.report = report
        state = Mutex(State(limit: max(1, jobs)))
    }

    /// The jobs allowed for `reading`: all, half under CPU pressure, one under memory pressure.
    public func allowed(for reading: PressureReading) -> (jobs: Int, pressure: String?) {
        if let memory = reading.memory, memory >= thresholds.memory { return (1, "memory") }
        if let cpu = reading.cpu, cpu >= thresholds.cpu { return (max(1, requested / 2), "CPU") }
        return (requested, nil)
    }

    /// The jobs allowed now, re-reading pressure if the last reading is older than ``interval``.
    public func limit() -> Int {
        let now = ContinuousClock.now
        let due = state.withLock { s -> Bool in
            if let last = s.lastSample, now - last < interval { return false }
            s.lastSample = now
            return true
        }
        guard due, requested > 1 else { return state.withLock { $0.limit } }
        let reading = sample()
        let (jobs, pressure) = allowed(for: reading)
        let first = state.withLock { s -> Bool in
            s.limit = jobs
            guard pressure != nil, !s.reported else { return false }
            s.reported = true
            return true
        }
        if first {
            report(Change(jobs: jobs, requested: requested, reading: reading, pressure: pressure))
        }
        condition.broadcast()
        return jobs
    }

    /// Waits (on a thread, not in async code) until one more job is allowed, and takes it.
    public func acquire() {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let allowed = limit()
            let taken = state.withLock { s -> Bool in
                guard s.inFlight < allowed else { return false }
                s.inFlight += 1
                return true
            }
            if taken { return }
            // Re-check when a job ends or the pressure is due to be read again.
            _ = condition.wait(until: Date(timeIntervalSinceNow: interval.seconds))
        }
    }

    /// Returns a job taken by ``acquire()``.
    public func release() {
        condition.lock()
        state.withLock { $0.inFlight -= 1 }
        condition.broadcast()
        condition.unlock()
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
