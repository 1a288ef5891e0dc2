import Foundation
import Logging
import SharedDefaults
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Corrupt and unreadable stores")
struct CorruptionTests {
    /// Damages the store file in place, as a failing disk or a careless editor would.
    static func damage(_ path: String, _ how: String) {
        switch how {
        case "garbage": try? Data("not a store at all".utf8).write(to: URL(fileURLWithPath: path))
        case "truncated to 0 bytes": truncate(path, 0)
        case "truncated mid-payload": truncate(path, 40)
        case "one flipped bit":
            var bytes = try! Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count - 2] ^= 0x04
            try! bytes.write(to: URL(fileURLWithPath: path))
        case "a directory":
            unlink(path)
            mkdir(path, 0o700)
        default:
            unlink(path)
            symlink("/etc/hostname", path)
        }
    }

    @Test(
        "a damaged store is moved aside, logged, and the suite continues from the backup",
        arguments: [
            "garbage", "truncated to 0 bytes", "truncated mid-payload", "one flipped bit",
            "a directory",
            "a symbolic link to another file",
        ]
    )
    func recoversFromBackup(name: String) throws {
        let root = try TemporaryRoot()
        let writer = try root.store()
        try writer.set("first", forKey: "a")
        try writer.set("second", forKey: "a")
        Self.damage(writer.storeURL.path, name)

        let log = LogCollector()
        let reader = try root.store(refresh: .statEveryRead, logger: log.logger)
        // The backup holds the version before the last commit.
        #expect(reader.string(forKey: "a") == "first", "\(name)")
        let files = try root.files(in: "test")
        #expect(files.contains { $0.hasPrefix("defaults.store.corrupt-") }, "\(name): \(files)")
        #expect(log.entries.contains { $0.0 == .error && $0.1.contains("corrupt") }, "\(name)")
        // The store was repaired: a fresh reader sees a valid store and nothing is moved again.
        let again = LogCollector()
        #expect(
            try root.store(refresh: .statEveryRead, logger: again.logger).string(forKey: "a")
                == "first"
        )
        #expect(again.entries.isEmpty)
        try reader.set("third", forKey: "a")
        #expect(try root.store(refresh: .statEveryRead).string(forKey: "a") == "third")
    }

    @Test("a running process keeps its newer snapshot when the store is damaged under it")
    func recoversFromMemory() throws {
        let root = try TemporaryRoot()
        let store = try root.store(refresh: .statEveryRead)
        try store.set(1, forKey: "a")
        try store.set(2, forKey: "a")
        try store.set(3, forKey: "a")
        try Data("garbage".utf8).write(to: store.storeURL)
        #expect(store.int(forKey: "a") == 3)
        #expect(try store.increment("a") == 4)
        #expect(try root.store(refresh: .statEveryRead).int(forKey: "a") == 4)
    }

    @Test("with both the store and its backup damaged the suite starts empty and says so")
    func bothDamaged() throws {
        let root = try TemporaryRoot()
        let writer = try root.store()
        try writer.set(1, forKey: "a")
        try writer.set(2, forKey: "a")
        try Data("x".utf8).write(to: writer.storeURL)
        try Data("y".utf8).write(
            to: writer.containerURL.appendingPathComponent("defaults.store.bak")
        )
        let log = LogCollector()
        let reader = try root.store(refresh: .statEveryRead, logger: log.logger)
        #expect(reader.storedValues().isEmpty)
        #expect(log.entries.contains { $0.2["restoredFrom"] == "nothing (empty)" })
    }

    @Test("a store damaged while a watcher runs is noticed and repaired without a write")
    func damagedWhileWatching() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set("kept", forKey: "a")
        try store.set("kept", forKey: "b")
        try Data("garbage".utf8).write(to: store.storeURL)
        #expect(
            await eventually {
                _ = store.string(forKey: "a")
                return
                    (try? root.files(in: "test").contains {
                        $0.hasPrefix("defaults.store.corrupt-")
                    }) == true
            }
        )
        #expect(try root.store(refresh: .statEveryRead).string(forKey: "b") == "kept")
    }
}
