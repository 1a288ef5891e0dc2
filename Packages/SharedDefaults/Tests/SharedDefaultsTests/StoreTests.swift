import Foundation
import Synchronization
import Testing

@testable import SharedDefaults

#if canImport(Glibc)
    import Glibc
#endif

@Suite("SharedStore in one process")
struct StoreTests {
    @Test("every value type reads back exactly as written, also from a fresh instance")
    func roundTripsEveryType() throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        let date = Date(timeIntervalSinceReferenceDate: 812_345_678.123_456)
        let values: [String: DefaultsValue] = [
            "string": "Grüße, \"quoted\"\n",
            "int": .int(-42),
            "big": .int(Int.max),
            "double": 3.25,
            "integralDouble": .double(3),
            "bool": true,
            "date": .date(date),
            "data": .data(Data([0, 1, 254, 255])),
            "array": [1, "two", [3.5]],
            "dictionary": ["nested": ["deep": true], "empty": [:]],
        ]
        for (key, value) in values { try store.set(value, forKey: key) }
        #expect(store.string(forKey: "string") == "Grüße, \"quoted\"\n")
        #expect(store.int(forKey: "int") == -42)
        #expect(store.double(forKey: "double") == 3.25)
        #expect(store.value(forKey: "integralDouble") == .double(3))
        #expect(store.bool(forKey: "bool") == true)
        #expect(store.date(forKey: "date") == date)
        #expect(store.data(forKey: "data") == Data([0, 1, 254, 255]))
        #expect(store.array(forKey: "array") == [1, "two", [3.5]])
        #expect(store.dictionary(forKey: "dictionary")?["nested"] == ["deep": true])

        let reopened = try root.store(refresh: .statEveryRead)
        #expect(reopened.storedValues() == values)
    }

    @Test("typed setters and the generic getter convert Swift types")
    func typedConversions() throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set(["a", "b"], forKey: "names")
        try store.set(["x": 1, "y": 2], forKey: "point")
        try store.set(7, forKey: "count")
        #expect(store.value(forKey: "names", as: [String].self) == ["a", "b"])
        #expect(store.value(forKey: "point", as: [String: Int].self) == ["x": 1, "y": 2])
        #expect(store.value(forKey: "count", as: String.self) == nil)
        #expect(store.value(forKey: "count", as: Double.self) == 7)
        #expect(store["missing"] == nil)
    }

    @Test("Codable values are stored as readable dictionaries and decode back")
    func codableHelpers() throws {
        struct Settings: Codable, Equatable {
            var server: String
            var retries: Int
            var beta: Bool
        }
        let root = try TemporaryRoot()
        let store = try root.store()
        let settings = Settings(server: "https://example.test", retries: 3, beta: false)
        try store.set(encoding: settings, forKey: "settings")
        #expect(store.dictionary(forKey: "settings")?["retries"] == .int(3))
        #expect(try store.decoded(Settings.self, forKey: "settings") == settings)
        #expect(try store.decoded(Settings.self, forKey: "absent") == nil)
        try store.set("not settings", forKey: "settings")
        #expect(throws: SharedStoreError.self) {
            try store.decoded(Settings.self, forKey: "settings")
        }
    }

    @Test("registered defaults fill in for absent keys but are never stored")
    func registeredDefaults() throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        store.register(defaults: ["timeout": 30, "server": "http://127.0.0.1:8080"])
        try store.set(5, forKey: "timeout")
        #expect(store.int(forKey: "timeout") == 5)
        #expect(store.string(forKey: "server") == "http://127.0.0.1:8080")
        #expect(
            store.dictionaryRepresentation() == ["timeout": 5, "server": "http://127.0.0.1:8080"]
        )
        #expect(store.storedValues() == ["timeout": 5])
        try store.removeValue(forKey: "timeout")
        #expect(store.int(forKey: "timeout") == 30)
        #expect(try root.store(refresh: .statEveryRead).storedValues().isEmpty)
    }

    @Test("remove, rename and remove-all change only what they say")
    func removeAndRename() throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set(values: ["a": 1, "b": 2, "c": 3])
        #expect(try store.removeValue(forKey: "a") == 1)
        #expect(try store.removeValue(forKey: "a") == nil)
        #expect(try store.renameValue(forKey: "b", to: "bee"))
        #expect(try store.renameValue(forKey: "nothing", to: "x") == false)
        #expect(store.storedValues() == ["bee": 2, "c": 3])
        try store.removeAll()
        #expect(store.storedValues().isEmpty)
    }

    @Test("increment starts at 0, adds, and refuses non-integers and overflow")
    func increment() throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        #expect(try store.increment("n") == 1)
        #expect(try store.increment("n", by: 799) == 800)
        #expect(try store.increment("n", by: -1000) == -200)
        try store.set("text", forKey: "s")
        let mismatch = #expect(throws: SharedStoreError.self) { try store.increment("s") }
        #expect(mismatch?.code == .typeMismatch)
        try store.set(Int.max, forKey: "max")
        let overflow = #expect(throws: SharedStoreError.self) { try store.increment("max") }
        #expect(overflow?.code == .overflow)
        #expect(store.int(forKey: "max") == Int.max)
    }

    @Test("a throwing update writes nothing; an update that changes nothing keeps the generation")
    func updateSemantics() throws {
        struct Abort: Error {}
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set(1, forKey: "a")
        let generation = store.generation
        #expect(throws: Abort.self) {
            try store.update { values in
                values["a"] = 2
                throw Abort()
            }
        }
        #expect(store.int(forKey: "a") == 1)
        try store.update { values in values["a"] = 1 }
        #expect(store.generation == generation)
        let result = try store.update { values -> Int in
            values["b"] = 2
            return values.count
        }
        #expect(result == 2)
        #expect(store.generation > generation)
    }

    @Test("threads of one process incrementing at once lose nothing")
    func concurrentThreads() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        let other = try root.store()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                let target = index.isMultiple(of: 2) ? store : other
                group.addTask { for _ in 0..<50 { try target.increment("n") } }
            }
            try await group.waitForAll()
        }
        #expect(try root.store(refresh: .statEveryRead).int(forKey: "n") == 400)
    }

    @Test("a second instance sees a commit through its notification, and with stat refresh at once")
    func otherInstancesSeeCommits() async throws {
        let root = try TemporaryRoot()
        let writer = try root.store()
        let notified = try root.store(refresh: .notifications)
        let stat = try root.store(refresh: .statEveryRead)
        #expect(notified.isWatching)
        #expect(!stat.isWatching)
        try writer.set("v1", forKey: "k")
        #expect(stat.string(forKey: "k") == "v1")
        #expect(await eventually { notified.string(forKey: "k") == "v1" })
        try writer.removeValue(forKey: "k")
        #expect(stat.string(forKey: "k") == nil)
        #expect(await eventually { notified.string(forKey: "k") == nil })
    }

    @Test("observers get old and new values per key and for the whole suite, in order")
    func observation() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        let watcher = try root.store()
        try store.set(1, forKey: "k")
        let keyChanges = watcher.changes(forKey: "k")
        let allChanges = watcher.changes()
        try store.set(2, forKey: "other")
        try store.set(3, forKey: "k")
        let change = try #require(await first(of: keyChanges))
        #expect(change.key == "k")
        #expect(change.oldValue == 1)
        #expect(change.newValue == 3)
        #expect(change.suite == "test")
        var iterator = allChanges.makeAsyncIterator()
        var seen: [String] = []
        while seen.count < 2, let next = await iterator.next() { seen.append(next.key) }
        // Commits that land within one notification arrive as one batch, sorted by key.
        #expect(Set(seen) == ["other", "k"])
    }

    @Test("a callback observation stops delivering after cancel")
    func callbackObservation() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        let received = LockedArray()
        let observation = store.observe(key: "k") { change in received.append(change.newValue) }
        try store.set("one", forKey: "k")
        #expect(await eventually { received.values == ["one"] })
        observation.cancel()
        try store.set("two", forKey: "k")
        try await Task.sleep(for: .milliseconds(100))
        #expect(received.values == ["one"])
    }

    @Test(
        "with stat refresh the watcher runs only while something observes, and its descriptor closes"
    )
    func watcherLifetime() async throws {
        let root = try TemporaryRoot()
        let store = try root.store(refresh: .statEveryRead)
        #expect(!store.isWatching)
        let observation = store.observe { _ in }
        let watcher = try #require(store.currentWatcher)
        #expect(!watcher.isClosed)
        observation.cancel()
        #expect(!store.isWatching)
        #expect(watcher.isClosed)

        let task = Task { for await _ in store.changes() {} }
        #expect(await eventually { store.isWatching })
        task.cancel()
        #expect(await eventually { !store.isWatching })
    }

    @Test("releasing the store ends its change sequences")
    func releasingEndsSequences() async throws {
        let root = try TemporaryRoot()
        var store: SharedStore? = try root.store()
        let changes = store!.changes()
        store = nil
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }
}

final class LockedArray: Sendable {
    private let storage = Mutex<[DefaultsValue?]>([])
    func append(_ value: DefaultsValue?) { storage.withLock { $0.append(value) } }
    var values: [DefaultsValue?] { storage.withLock { $0 } }
}
