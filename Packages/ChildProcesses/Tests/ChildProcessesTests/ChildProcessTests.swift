import ChildProcesses
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

let shell = URL(fileURLWithPath: "/bin/sh")

@Suite("Child processes for the tests")
struct ChildProcessTests {
    @Test("A child starts with no signal blocked or ignored, whatever the test process does")
    func signalsAtDefault() async throws {
        // This process ignores SIGPIPE (ChildProcesses does) and its threads block signals.
        let outcome = try await ChildProcess.run(
            shell,
            ["-c", "grep -E '^Sig(Blk|Ign):' /proc/self/status"]
        )
        #expect(outcome.status == 0, "\(outcome)")
        let masks = outcome.stdout.split(separator: "\n").compactMap { line in
            UInt64(line.split(separator: "\t").last ?? "", radix: 16)
        }
        #expect(masks.count == 2, "\(outcome.stdout)")
        // The 31 standard signals; glibc keeps two real-time ones (32, 33) for itself.
        for mask in masks { #expect(mask & 0x7FFF_FFFF == 0, "\(outcome.stdout)") }
    }

    @Test("A child gets exactly the environment it is given")
    func environment() async throws {
        let outcome = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            environment: ["SHOPFLOOR_HOME": "/tmp/a b", "EMPTY": ""]
        )
        #expect(
            Set(outcome.stdout.split(separator: "\n")) == ["SHOPFLOOR_HOME=/tmp/a b", "EMPTY="]
        )
    }

    @Test("A child holds no descriptor of the test process beyond its three standard ones")
    func noInheritedDescriptors() async throws {
        let stray = open("/dev/null", O_RDONLY)  // no O_CLOEXEC: a child would inherit it
        defer { close(stray) }
        let outcome = try await ChildProcess.run(shell, ["-c", "ls /proc/$$/fd"])
        let names = outcome.stdout.split(separator: "\n").map(String.init)
        #expect(Set(names) == ["0", "1", "2"], "\(names)")
    }

    @Test("stdin is fed in full and both pipes are read to their end")
    func stdinAndBothPipes() async throws {
        // More than a pipe holds, in each direction at once.
        let input = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 % 251) })
        let outcome = try await ChildProcess.run(
            shell,
            ["-c", "cat; head -c 300000 /dev/zero >&2; echo done >&2"],
            stdin: .data(input)
        )
        #expect(outcome.status == 0 && !outcome.signalled)
        #expect(outcome.stdoutData == input)
        #expect(outcome.stderrData.count == 300_005)
        #expect(outcome.stderr.hasSuffix("done\n"))
    }

    @Test("A child that outlives its time is killed and reported as timed out")
    func timeoutKills() async throws {
        let outcome = try await ChildProcess.run(shell, ["-c", "exec sleep 60"], timeout: 0.5)
        #expect(outcome.timedOut)
        #expect(outcome.signalled && outcome.status == SIGKILL)
    }

    @Test("A live child's stdout is read line by line, and a signal stops it")
    func linesAndSignal() async throws {
        let child = try await ChildProcess.start(
            shell,
            [
                "-c",
                "echo one; echo two; trap 'echo bye; exit 7' TERM; while :; do sleep 0.05; done",
            ]
        )
        #expect(await child.nextLine() == "one")
        #expect(await child.nextLine() == "two")
        #expect(child.isRunning)
        let (_, outcome) = await child.stop(with: SIGTERM)
        #expect(outcome.status == 7 && !outcome.signalled, "\(outcome)")
        #expect(outcome.stdout == "bye\n")
        #expect(child.lines == ["one", "two", "bye"])
        // The outcome does not take what it reports: the rest is still there to read.
        #expect(await child.nextLine(timeout: 1) == "bye")
        #expect(await child.nextLine(timeout: 1) == nil)
    }

    @Test("stdin written while the child runs reaches it in order, and closing it ends the child")
    func writer() async throws {
        let child = try await ChildProcess.start(URL(fileURLWithPath: "/bin/cat"), stdin: .writer)
        child.write(Data("first\n".utf8))
        #expect(await child.nextLine() == "first")
        child.write(Data("second\n".utf8))
        #expect(await child.nextLine() == "second")
        child.finishInput()
        let outcome = await child.wait()
        #expect(outcome.status == 0 && !outcome.timedOut)
    }

    @Test("A stopped child is seen stopped, and carries on when continued")
    func stoppedChild() async throws {
        let child = try await ChildProcess.start(
            shell,
            ["-c", "read line; echo got $line"],
            stdin: .writer
        )
        child.signal(SIGTSTP)
        #expect(await child.waitUntilStopped())
        child.signal(SIGCONT)
        child.write(Data("it\n".utf8))
        #expect(await child.nextLine() == "got it")
        #expect(await child.wait().status == 0)
    }

    @Test("An executable that does not exist is an error naming it")
    func missingExecutable() async throws {
        let missing = URL(fileURLWithPath: "/nonexistent/tool")
        let error = await #expect(throws: ChildProcessError.self) {
            try await ChildProcess.run(missing)
        }
        #expect(error?.description.contains("/nonexistent/tool") == true)
    }
}
