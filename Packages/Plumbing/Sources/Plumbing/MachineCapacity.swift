import Foundation
import Glibc

/// What this process may really use of the machine: the CPUs it may run on
/// (`sched_getaffinity`), its cgroup's CPU quota and its memory limit (cgroup v1 or v2).
///
/// A container with a 1-CPU quota on a 64-core host sees 64 cores in
/// `activeProcessorCount`; sizing parallel work from ``cpus`` instead keeps it from being
/// throttled. Limits are read from the process's own cgroup (`/proc/self/cgroup`) and every
/// ancestor up to the hierarchy's mount, the smallest winning, as the kernel enforces them.
/// A file that is absent, unreadable or garbage counts as "no limit", never as an error.
///
/// ```swift
/// let jobs = MachineCapacity.current().cpus
/// ```
public struct MachineCapacity: Sendable, Equatable {
    /// CPUs in the process's affinity mask (at least 1).
    public var affinityCPUs: Int
    /// The cgroup's CPU quota in CPUs (quota ÷ period, e.g. 1.5), or nil for none.
    public var cpuQuota: Double?
    /// The cgroup's memory limit in bytes, or nil for none.
    public var memoryLimit: Int?

    /// Creates a capacity from its parts.
    public init(affinityCPUs: Int, cpuQuota: Double? = nil, memoryLimit: Int? = nil) {
        self.affinityCPUs = max(1, affinityCPUs)
        self.cpuQuota = cpuQuota
        self.memoryLimit = memoryLimit
    }

    /// The parallelism the CPUs allow: the affinity CPUs, bounded by the quota rounded up.
    public var cpus: Int {
        guard let cpuQuota, cpuQuota > 0 else { return affinityCPUs }
        let quota = cpuQuota >= Double(Int32.max) ? Int(Int32.max) : Int(cpuQuota.rounded(.up))
        return max(1, min(affinityCPUs, quota))
    }

    /// Jobs that fit both ``cpus`` and the memory limit when each job takes `bytesPerJob`
    /// and the process itself `reserve` bytes (at least 1).
    public func jobs(bytesPerJob: Int, reserve: Int = 0) -> Int {
        guard let memoryLimit, bytesPerJob > 0 else { return cpus }
        return max(1, min(cpus, (memoryLimit - reserve) / bytesPerJob))
    }

    /// Where the capacity is read from; tests point these at a temporary directory.
    public struct Sources: Sendable {
        /// The file listing the process's cgroups (`/proc/self/cgroup`).
        public var cgroupFile: String
        /// Where the cgroup hierarchies are mounted (`/sys/fs/cgroup`).
        public var cgroupRoot: String
        /// The affinity CPUs to use instead of asking the kernel (tests), or nil.
        public var affinityCPUs: Int?

        /// Creates sources.
        public init(
            cgroupFile: String = "/proc/self/cgroup",
            cgroupRoot: String = "/sys/fs/cgroup",
            affinityCPUs: Int? = nil
        ) {
            self.cgroupFile = cgroupFile
            self.cgroupRoot = cgroupRoot
            self.affinityCPUs = affinityCPUs
        }

        /// This process on this machine.
        public static let system = Sources()
    }

    /// Reads the capacity of this process (or of what `sources` describe).
    public static func current(_ sources: Sources = .system) -> MachineCapacity {
        let affinity = sources.affinityCPUs ?? affinityCount()
        let groups = CgroupPaths.parse(readSmallFile(sources.cgroupFile) ?? "")
        let root = sources.cgroupRoot
        // cgroup v2 when the root itself is a unified hierarchy (it lists its controllers).
        if let path = groups.unified,
            FileManager.default.fileExists(atPath: root + "/cgroup.controllers")
        {
            let directories = ancestry(root: root, path: path)
            let quota = directories.compactMap { parseCPUMax(readSmallFile($0 + "/cpu.max")) }.min()
            let memory = directories.compactMap { parseLimit(readSmallFile($0 + "/memory.max")) }
                .min()
            return MachineCapacity(affinityCPUs: affinity, cpuQuota: quota, memoryLimit: memory)
        }
        var quota: Double?
        if let (mount, path) = v1Hierarchy(root: root, groups: groups, controller: "cpu") {
            quota = ancestry(root: mount, path: path).compactMap { directory -> Double? in
                guard let q = parseInteger(readSmallFile(directory + "/cpu.cfs_quota_us")), q > 0,
                    let p = parseInteger(readSmallFile(directory + "/cpu.cfs_period_us")), p > 0
                else { return nil }
                return Double(q) / Double(p)
            }.min()
        }
        var memory: Int?
        if let (mount, path) = v1Hierarchy(root: root, groups: groups, controller: "memory") {
            memory = ancestry(root: mount, path: path).compactMap {
                parseLimit(readSmallFile($0 + "/memory.limit_in_bytes"))
            }.min()
        }
        return MachineCapacity(affinityCPUs: affinity, cpuQuota: quota, memoryLimit: memory)
    }

    /// CPUs in this process's affinity mask (`sched_getaffinity`, which Glibc's module
    /// hides behind `_GNU_SOURCE`, so it is looked up), or the online count if that fails.
    public static func affinityCount() -> Int {
        typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
        let online = max(1, ProcessInfo.processInfo.activeProcessorCount)
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "sched_getaffinity")
        else { return online }
        let getAffinity = unsafeBitCast(symbol, to: GetAffinity.self)
        // 1,024 CPUs' bits, glibc's cpu_set_t.
        var mask = [UInt64](repeating: 0, count: 16)
        let result = mask.withUnsafeMutableBytes { getAffinity(0, $0.count, $0.baseAddress!) }
        guard result == 0 else { return online }
        return max(1, mask.reduce(0) { $0 + $1.nonzeroBitCount })
    }

    // MARK: Parsing (internal for tests)

    /// A limit file's value: nil for "max", absent, garbage, or ≥ 2^62 (v1's "unlimited"
    /// is a page-rounded Int64.max).
    static func parseLimit(_ text: String?) -> Int? {
        guard let value = parseInteger(text), value > 0, value < 1 << 62 else { return nil }
        return value
    }

    /// v2 `cpu.max` ("QUOTA PERIOD" or "max PERIOD") as CPUs, nil for none or garbage.
    static func parseCPUMax(_ text: String?) -> Double? {
        guard let fields = text?.split(whereSeparator: \.isWhitespace), fields.count >= 1,
            let quota = Int(fields[0]), quota > 0
        else { return nil }
        let period = fields.count >= 2 ? Int(fields[1]) ?? 0 : 100_000
        guard period > 0 else { return nil }
        return Double(quota) / Double(period)
    }

    static func parseInteger(_ text: String?) -> Int? {
        guard let text else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The process's cgroup paths by controller (v1) and in the unified hierarchy (v2).
    struct CgroupPaths {
        var byController: [String: String] = [:]
        var unified: String?

        static func parse(_ text: String) -> CgroupPaths {
            var paths = CgroupPaths()
            for line in text.split(separator: "\n") {
                let fields = line.split(
                    separator: ":",
                    maxSplits: 2,
                    omittingEmptySubsequences: false
                )
                guard fields.count == 3, fields[2].hasPrefix("/") else { continue }
                let path = String(fields[2])
                if fields[0] == "0" && fields[1].isEmpty {
                    paths.unified = path
                } else {
                    for controller in fields[1].split(separator: ",") {
                        paths.byController[String(controller)] = path
                    }
                }
            }
            return paths
        }
    }

    /// The v1 mount holding `controller` (`cpu`, or `cpu,cpuacct`) and the process's path in it.
    private static func v1Hierarchy(
        root: String,
        groups: CgroupPaths,
        controller: String
    ) -> (String, String)? {
        guard let path = groups.byController[controller] else { return nil }
        let names = [controller, "cpu,cpuacct", "cpuacct,cpu"]
        for name in names where controller == "cpu" || name == controller {
            let mount = root + "/" + name
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: mount, isDirectory: &isDirectory),
                isDirectory.boolValue
            {
                return (mount, path)
            }
        }
        return nil
    }

    /// The directories from the process's cgroup up to the mount. In a container whose
    /// mount is its own cgroup (no cgroup namespace) the path does not exist below the
    /// mount; then only the mount's own files apply.
    private static func ancestry(root: String, path: String) -> [String] {
        var components = path.split(separator: "/").map(String.init)
        var directories: [String] = []
        while !components.isEmpty {
            let directory = root + "/" + components.joined(separator: "/")
            if FileManager.default.fileExists(atPath: directory) { directories.append(directory) }
            components.removeLast()
        }
        directories.append(root)
        return directories
    }
}

/// Reads a small text file (a /proc or /sys file, at most 64 KiB), or nil.
func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 65_536)
    var count = 0
    // /proc and /sys files are produced per read; read until end of file.
    while count < bytes.count {
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
        if n < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if n == 0 { break }
        count += n
    }
    return String(decoding: bytes[..<count], as: UTF8.self)
}
