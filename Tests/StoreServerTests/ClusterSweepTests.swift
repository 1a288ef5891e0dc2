import ChildProcesses
import Foundation
import Testing

/// The test clusters of killed test processes are swept by the next one
/// (``PostgresCluster/sweepOrphans(in:)``), and nothing else is.
@Suite("orphaned test clusters")
struct ClusterSweepTests {
    @Test("only a dead owner's cluster goes, and no process but its postmaster is signalled")
    func sweepsOnlyOrphans() async throws {
        let parent = FileManager.default.temporaryDirectory
            .appendingPathComponent("cluster-sweep-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: parent) }
        // A pid that was just in use and is no longer: a child that ran to its end.
        let child = try await ChildProcess.start(URL(fileURLWithPath: "/bin/true"))
        let deadPID = child.processIdentifier
        _ = await child.wait(timeout: 30)
        try #require(kill(deadPID, 0) != 0 && errno == ESRCH)

        let prefix = PostgresCluster.namePrefix
        let orphan = parent.appendingPathComponent("\(prefix)\(deadPID)-0rphan00")
        let live = parent.appendingPathComponent("\(prefix)\(getppid())-a1ive000")
        let unnamed = parent.appendingPathComponent("\(prefix)0ACE1234")
        let other = parent.appendingPathComponent("not-a-cluster-\(deadPID)-00000000")
        for directory in [orphan, live, unnamed, other] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent("data"),
                withIntermediateDirectories: true
            )
        }
        // The orphan's pid file names a live process that is not its postmaster (the pid
        // was reused): the sweep must not signal it.
        let bystander = try await ChildProcess.start(
            URL(fileURLWithPath: "/bin/sleep"),
            ["30"]
        )
        try Data("\(bystander.processIdentifier)\n\(orphan.path)/data\n".utf8).write(
            to: orphan.appendingPathComponent("data/postmaster.pid")
        )

        PostgresCluster.sweepOrphans(in: [parent.path])

        #expect(!FileManager.default.fileExists(atPath: orphan.path))
        #expect(FileManager.default.fileExists(atPath: live.path))
        #expect(FileManager.default.fileExists(atPath: unnamed.path))
        #expect(FileManager.default.fileExists(atPath: other.path))
        // A signalled child would be collected within milliseconds.
        try await Task.sleep(for: .milliseconds(300))
        #expect(bystander.isRunning, "a process that is no postmaster of the cluster was signalled")
        kill(bystander.processIdentifier, SIGTERM)
        _ = await bystander.wait(timeout: 30)
    }
}
