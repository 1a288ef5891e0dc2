import Foundation
import Synchronization
import Testing

@testable import Plumbing

/// Writes `files` (relative path → contents) under a fresh temporary directory.
private func tree(_ files: [String: String]) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory()
    for (path, contents) in files {
        let url = directory.url.appendingPathComponent(path)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try contents.write(to: url, atomically: false, encoding: .utf8)
    }
    return directory
}

private func capacity(_ directory: TemporaryDirectory, cpus: Int = 8) -> MachineCapacity {
    MachineCapacity.current(
        .init(
            cgroupFile: directory.path + "/proc-self-cgroup",
            cgroupRoot: directory.path + "/cgroup",
            affinityCPUs: cpus
        )
    )
}

@Suite("Machine capacity from cgroups")
struct MachineCapacityTests {
    @Test("cgroup v1: the CPU quota and memory limit of the process's own cgroup")
    func v1() throws {
        let directory = try tree([
            "proc-self-cgroup": "4:memory:/jobs/a\n3:cpuset:/\n1:cpu,cpuacct:/jobs/a\n0::/\n",
            "cgroup/cpu/cpu.cfs_quota_us": "-1\n",
            "cgroup/cpu/cpu.cfs_period_us": "100000\n",
            "cgroup/cpu/jobs/a/cpu.cfs_quota_us": "150000\n",
            "cgroup/cpu/jobs/a/cpu.cfs_period_us": "100000\n",
            "cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
            "cgroup/memory/jobs/a/memory.limit_in_bytes": "536870912\n",
        ])
        let found = capacity(directory)
        #expect(found.cpuQuota == 1.5)
        #expect(found.cpus == 2)
        #expect(found.memoryLimit == 512 << 20)
        #expect(found.jobs(bytesPerJob: 200 << 20) == 2)
        #expect(found.jobs(bytesPerJob: 400 << 20) == 1)
    }

    @Test("cgroup v1: an ancestor's smaller quota wins, as the kernel enforces it")
    func v1Ancestor() throws {
        let directory = try tree([
            "proc-self-cgroup": "1:cpu:/outer/inner\n",
            "cgroup/cpu/outer/cpu.cfs_quota_us": "50000",
            "cgroup/cpu/outer/cpu.cfs_period_us": "100000",
            "cgroup/cpu/outer/inner/cpu.cfs_quota_us": "400000",
            "cgroup/cpu/outer/inner/cpu.cfs_period_us": "100000",
        ])
        let found = capacity(directory)
        #expect(found.cpuQuota == 0.5)
        #expect(found.cpus == 1)
        #expect(found.memoryLimit == nil)
    }

    @Test("cgroup v1 in a container: the mount's own files when the path is not below it")
    func v1ContainerMount() throws {
        let directory = try tree([
            "proc-self-cgroup": "1:cpu:/docker/0123abcd\n",
            "cgroup/cpu/cpu.cfs_quota_us": "300000",
            "cgroup/cpu/cpu.cfs_period_us": "100000",
        ])
        #expect(capacity(directory, cpus: 16).cpus == 3)
    }

    @Test("cgroup v2: cpu.max and memory.max, with max meaning none")
    func v2() throws {
        let directory = try tree([
            "proc-self-cgroup": "0::/app.slice/scan.scope\n",
            "cgroup/cgroup.controllers": "cpu memory\n",
            "cgroup/app.slice/cpu.max": "max 100000\n",
            "cgroup/app.slice/memory.max": "1073741824\n",
            "cgroup/app.slice/scan.scope/cpu.max": "250000 100000\n",
            "cgroup/app.slice/scan.scope/memory.max": "max\n",
        ])
        let found = capacity(directory)
        #expect(found.cpuQuota == 2.5)
        #expect(found.cpus == 3)
        #expect(found.memoryLimit == 1 << 30)
        #expect(capacity(directory, cpus: 2).cpus == 2)
    }

    @Test("cgroup v2 with max everywhere: the affinity CPUs and no memory limit")
    func v2Unlimited() throws {
        let directory = try tree([
            "proc-self-cgroup": "0::/user.slice\n",
            "cgroup/cgroup.controllers": "cpu memory\n",
            "cgroup/user.slice/cpu.max": "max 100000\n",
            "cgroup/user.slice/memory.max": "max\n",
        ])
        #expect(capacity(directory, cpus: 4) == MachineCapacity(affinityCPUs: 4))
    }

    @Test("absent files: no limits, the affinity CPUs")
    func absent() throws {
        let directory = try TemporaryDirectory()
        #expect(capacity(directory, cpus: 6) == MachineCapacity(affinityCPUs: 6))
    }

    @Test("garbage in every file counts as no limit, never a crash")
    func garbage() throws {
        let directory = try tree([
            "proc-self-cgroup": "nonsense\n::\n1:cpu:relative\n4:memory:/m\n\u{0}\u{1}",
            "cgroup/cpu/cpu.cfs_quota_us": "lots",
            "cgroup/cpu/cpu.cfs_period_us": "0",
            "cgroup/memory/m/memory.limit_in_bytes": "-5\n",
            "cgroup/memory/memory.limit_in_bytes": "12abc",
        ])
        #expect(capacity(directory, cpus: 3) == MachineCapacity(affinityCPUs: 3))
        #expect(MachineCapacity.parseCPUMax("0 100000") == nil)
        #expect(MachineCapacity.parseCPUMax("50000 0") == nil)
        #expect(MachineCapacity.parseCPUMax("") == nil)
        #expect(MachineCapacity.parseLimit("max") == nil)
    }

    @Test("this process: at least one CPU, no more than the affinity mask")
    func thisProcess() {
        let found = MachineCapacity.current()
        #expect(found.affinityCPUs >= 1)
        #expect((1...found.affinityCPUs).contains(found.cpus))
    }
}

@Suite("Pressure-stall back-off")
struct PressureBackoffTests {
    @Test("reads some avg10 of cpu and memory; absent or garbage files read as nil")
    func reading() throws {
        let directory = try tree([
            "cpu": "some avg10=93.25 avg60=90.19 avg300=93.26 total=14427382872\n"
                + "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
            "memory": "some avg10=zero avg60=1 total=2\n",
        ])
        #expect(PressureReading.read(root: directory.path) == PressureReading(cpu: 93.25))
        #expect(PressureReading.read(root: directory.path + "/absent") == PressureReading())
        #expect(PressureReading.someAverage10("some avg10=101.00") == nil)
    }

    @Test("CPU pressure halves the jobs, memory pressure leaves one, clearing restores all")
    func backsOffAndRecovers() throws {
        let directory = try tree([
            "cpu": "some avg10=95.00 avg60=0 avg300=0 total=0\n",
            "memory": "some avg10=0.00 avg60=0 avg300=0 total=0\n",
        ])
        let reports = Mutex<[PressureBackoff.Change]>([])
        let backoff = PressureBackoff(jobs: 4, pressureRoot: directory.path, interval: .zero) {
            change in reports.withLock { $0.append(change) }
        }
        #expect(backoff.limit() == 2)
        try "some avg10=30.00 avg60=0 avg300=0 total=0\n".write(
            toFile: directory.path + "/memory",
            atomically: true,
            encoding: .utf8
        )
        #expect(backoff.limit() == 1)
        try "some avg10=1.00\n".write(
            toFile: directory.path + "/cpu",
            atomically: true,
            encoding: .utf8
        )
        try "some avg10=0.00\n".write(
            toFile: directory.path + "/memory",
            atomically: true,
            encoding: .utf8
        )
        #expect(backoff.limit() == 4)
        let said = reports.withLock { $0 }
        #expect(said.count == 1)
        #expect(
            said.first?.message
                == "CPU pressure (some avg10 95.0%): 2 jobs instead of 4 until it clears"
        )
    }

    @Test("no pressure files: no back-off and nothing said")
    func noPSI() throws {
        let directory = try TemporaryDirectory()
        let said = Mutex(0)
        let backoff = PressureBackoff(
            jobs: 3,
            pressureRoot: directory.path + "/none",
            interval: .zero
        ) {
            _ in said.withLock { $0 += 1 }
        }
        #expect(backoff.limit() == 3)
        #expect(said.withLock { $0 } == 0)
    }

    @Test("threads acquiring under pressure never run more jobs than allowed")
    func acquireBounds() throws {
        let backoff = PressureBackoff(
            jobs: 4,
            interval: .milliseconds(5),
            sample: { PressureReading(memory: 50) }
        )
        let running = Mutex((now: 0, most: 0))
        let threads = 4
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            Thread {
                for _ in 0..<20 {
                    backoff.acquire()
                    running.withLock {
                        $0.now += 1; $0.most = max($0.most, $0.now)
                    }
                    usleep(200)
                    running.withLock { $0.now -= 1 }
                    backoff.release()
                }
                done.leave()
            }.start()
        }
        done.wait()
        #expect(running.withLock { $0.most } == 1)
    }
}
