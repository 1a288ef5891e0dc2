import CommandSupport
import Logging
import Plumbing
import Scanner

/// `scan`'s share of the machine: the default `--jobs` and `--memory-budget` from the
/// cgroup's CPU quota and memory limit, and the back-off of long batches under pressure.
struct ScanCapacity {
    /// The least memory one job's images get of the budget before another job is worth it.
    static let bytesPerJob = 64 << 20

    /// The jobs to run.
    var jobs: Int
    /// The memory budget in bytes.
    var memoryBudget: Int

    /// The defaults for what the user did not give: jobs are the affinity CPUs bounded by the
    /// CPU quota rounded up and by the budget at ``bytesPerJob`` each; the budget is 1 GiB,
    /// or half the memory limit if that is smaller (at least 64 MiB).
    init(jobs: Int?, memoryBudgetMiB: Int?, capacity: MachineCapacity, logger: Logger) {
        var budget = memoryBudgetMiB.map { $0 << 20 } ?? MemoryBudget.defaultCapacity
        if memoryBudgetMiB == nil, let limit = capacity.memoryLimit {
            budget = max(64 << 20, min(budget, limit / 2))
        }
        memoryBudget = budget
        self.jobs = jobs ?? max(1, min(capacity.cpus, budget / Self.bytesPerJob))
        let quota = capacity.cpuQuota.map { String($0) } ?? "none"
        let limit = capacity.memoryLimit.map { "\($0 >> 20) MiB" } ?? "none"
        logger.debug(
            "jobs: \(self.jobs) (affinity CPUs \(capacity.affinityCPUs), CPU quota \(quota), memory limit \(limit), memory budget \(budget >> 20) MiB)"
        )
    }

    /// The pressure back-off for a batch of `count` inputs: none when at most one job could run.
    func throttle(count: Int, quiet: Bool, progress: ProgressLine) -> PressureThrottle? {
        guard jobs > 1, count > jobs else { return nil }
        let backoff = PressureBackoff(jobs: jobs) { change in
            guard !quiet else { return }
            progress.clear()
            Console.warning("scan: \(change.message)")
        }
        return PressureThrottle(backoff: backoff)
    }
}

/// A ``PressureBackoff`` as the batch's throttle.
struct PressureThrottle: BatchThrottle {
    let backoff: PressureBackoff

    func acquire() { backoff.acquire() }
    func release() { backoff.release() }
}
