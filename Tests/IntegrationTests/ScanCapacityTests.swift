import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A cgroup v1 CPU group of this test's own, removed when the test ends; nil when this
/// process may not make one (not root, no writable v1 cpu hierarchy).
private final class CPUGroup {
    static let hierarchy = "/sys/fs/cgroup/cpu"
    let path: String

    init?(quotaMicroseconds: Int, periodMicroseconds: Int = 100_000) {
        guard geteuid() == 0,
            FileManager.default.fileExists(atPath: Self.hierarchy + "/cpu.cfs_quota_us")
        else { return nil }
        path = Self.hierarchy + "/shopfloor-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(path, 0o755) == 0 else { return nil }
        do {
            try "\(periodMicroseconds)".write(
                toFile: path + "/cpu.cfs_period_us",
                atomically: false,
                encoding: .utf8
            )
            try "\(quotaMicroseconds)".write(
                toFile: path + "/cpu.cfs_quota_us",
                atomically: false,
                encoding: .utf8
            )
        } catch {
            rmdir(path)
            return nil
        }
    }

    deinit { rmdir(path) }

    static var available: Bool { CPUGroup(quotaMicroseconds: 50_000) != nil }
}

@Suite("scan sizes itself to its cgroup", .serialized)
struct ScanCapacityTests {
    @Test(
        "in a cgroup with half a CPU's quota, scan chooses one job",
        .enabled(if: CPUGroup.available, "needs root and a writable cgroup v1 cpu hierarchy")
    )
    func quotaOfHalfACPU() async throws {
        let group = try #require(CPUGroup(quotaMicroseconds: 50_000))
        let qr = ScanTool.corpus.appendingPathComponent("qrcode-2/1.png").path
        // The child puts itself into the group before it becomes scan.
        let run = try await CommandRunner.run(
            URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", "echo $$ > \"$0\"/cgroup.procs && exec \"$@\"", group.path,
                ScanTool.binary.path, "--verbose", qr, qr, qr,
            ]
        )
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("jobs: 1 (affinity CPUs"), "\(run.stderr)")
        #expect(run.stderr.contains("CPU quota 0.5"), "\(run.stderr)")
    }

    @Test("outside a quota, --jobs given is kept and said with --verbose")
    func explicitJobs() async throws {
        let qr = ScanTool.corpus.appendingPathComponent("qrcode-2/1.png").path
        let run = try await ScanTool.run(["--verbose", "--jobs", "3", qr])
        #expect(run.status == 0)
        #expect(run.stderr.contains("jobs: 3 ("), "\(run.stderr)")
    }
}
