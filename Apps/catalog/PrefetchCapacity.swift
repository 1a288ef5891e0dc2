import CommandSupport
import Plumbing

/// `catalog prefetch`'s share of the machine: its default `--jobs` and the back-off of its
/// loads while the kernel reports CPU or memory pressure.
enum PrefetchCapacity {
    /// The default `--jobs`: twice the CPUs this process may use (affinity, bounded by the
    /// cgroup's CPU quota rounded up), at least 4 (downloads mostly wait on the network) and
    /// at most 16.
    static func defaultJobs(_ capacity: MachineCapacity = .current()) -> Int {
        min(16, max(4, 2 * capacity.cpus))
    }

    /// The back-off for `count` loads `jobs` at a time: none when at most one could run.
    /// Its one warning clears the progress bar first.
    static func backoff(jobs: Int, count: Int, bar: ProgressLine) -> PressureBackoff? {
        guard jobs > 1, count > jobs else { return nil }
        return PressureBackoff(jobs: jobs) { change in
            bar.clear()
            Console.warning("prefetch: \(change.message)")
        }
    }
}
