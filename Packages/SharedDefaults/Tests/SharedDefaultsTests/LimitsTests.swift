import ChildProcesses
import Foundation
import Logging
import Testing

@testable import SharedDefaults

#if canImport(Glibc)
    import Glibc
#endif

@Suite("One set of limits for parser, writer and reader")
struct LimitsTests {
    static func nested(_ depth: Int) -> DefaultsValue {
        var value: DefaultsValue = 1
        for index in 0..<depth { value = index.isMultiple(of: 2) ? [value] : ["k": value] }
        return value
    }

    static func nestedJSON(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
    }

    @Test(
        "a value nested to the limit is written and read back by a fresh reader; one level more is refused before anything is written"
    )
    func nesting() throws {
        let root = try TemporaryRoot()
        let store = try root.store(refresh: .statEveryRead)
        try store.set(Self.nested(DefaultsLimits.maximumNestingDepth), forKey: "deep")
        let generation = store.generation
        #expect(
            try root.store(refresh: .statEveryRead).value(forKey: "deep")
                == Self.nested(DefaultsLimits.maximumNestingDepth)
        )
        #expect {
            try store.set(Self.nested(DefaultsLimits.maximumNestingDepth + 1), forKey: "deeper")
        } throws: { error in
            let error = error as? SharedStoreError
            return error?.code == .limitExceeded && error?.message.contains("'deeper'") == true
        }
        #expect(store.generation == generation)
        #expect(try !root.files(in: "test").contains { $0.contains("corrupt") })
    }

    @Test(
        "the JSON and property-list parsers take the same limit, and one more level for a whole suite"
    )
    func parsers() throws {
        let limit = DefaultsLimits.maximumNestingDepth
        #expect(throws: Never.self) { try DefaultsValue(jsonText: Self.nestedJSON(limit)) }
        #expect { try DefaultsValue(jsonText: Self.nestedJSON(limit + 1)) } throws: {
            ($0 as? DefaultsValueParseError)?.limit == .nestingDepth
        }
        let suite = "{\"a\": \(Self.nestedJSON(limit))}"
        #expect(throws: Never.self) {
            try DefaultsValue(jsonText: suite, maximumNestingDepth: limit + 1)
        }
        let plist = DefaultsValue.dictionary(["a": Self.nested(limit)]).propertyListXML()
        #expect(throws: Never.self) {
            try DefaultsValue(propertyList: Data(plist.utf8), maximumNestingDepth: limit + 1)
        }
        let deeper = DefaultsValue.dictionary(["a": Self.nested(limit + 1)]).propertyListXML()
        #expect {
            try DefaultsValue(propertyList: Data(deeper.utf8), maximumNestingDepth: limit + 1)
        } throws: { ($0 as? DefaultsValueParseError)?.limit == .nestingDepth }
        // Whatever the parser accepts for a value, the store writes and reads back.
        let root = try TemporaryRoot()
        try root.store().set(try DefaultsValue(jsonText: Self.nestedJSON(limit)), forKey: "v")
        #expect(try root.store(refresh: .statEveryRead).value(forKey: "v") != nil)
    }

    @Test(
        "a suite past 64 MiB and a date outside the years 1 to 9999 are refused, and nothing is written"
    )
    func sizeAndDates() throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set("kept", forKey: "a")
        let before = try Data(contentsOf: store.storeURL)
        #expect {
            try store.set(Data(count: DefaultsLimits.maximumStoreBytes), forKey: "big")
        } throws: { ($0 as? SharedStoreError)?.code == .limitExceeded }
        for date in [Date(timeIntervalSince1970: 1e15), Date(timeIntervalSince1970: -1e15)] {
            #expect { try store.set(date, forKey: "when") } throws: {
                ($0 as? SharedStoreError)?.code == .limitExceeded
            }
        }
        try store.set(DefaultsLimits.latestDate, forKey: "last")
        try store.set(DefaultsLimits.earliestDate, forKey: "first")
        #expect(
            try root.store(refresh: .statEveryRead).date(forKey: "last")
                == DefaultsLimits.latestDate
        )
        #expect(try Data(contentsOf: store.storeURL) != before)
        #expect(try root.store(refresh: .statEveryRead).string(forKey: "a") == "kept")
    }

    /// A store file whose checksums hold over `payload`.
    static func forge(generation: UInt64, payload: [UInt8]) -> [UInt8] {
        var header: [UInt8] = Array("SFDS".utf8)
        StoreFormat.appendLE(UInt16(1), into: &header)
        StoreFormat.appendLE(UInt16(0), into: &header)
        StoreFormat.appendLE(generation, into: &header)
        StoreFormat.appendLE(UInt64(payload.count), into: &header)
        StoreFormat.appendLE(payload.withUnsafeBytes { CRC32.checksum($0) }, into: &header)
        StoreFormat.appendLE(header.withUnsafeBytes { CRC32.checksum($0) }, into: &header)
        return header + payload
    }

    @Test(
        "a store with hostile fields under valid checksums is moved aside and the suite recovered; writes go on",
        arguments: [
            "maximum generation", "invalid UTF-8", "date out of range", "nested past the limit",
        ]
    )
    func hostileFields(kind: String) throws {
        let root = try TemporaryRoot()
        let writer = try root.store()
        try writer.set("first", forKey: "a")
        try writer.set("second", forKey: "a")
        let valid = Array(try Data(contentsOf: writer.storeURL))
        var bytes: [UInt8]
        switch kind {
        case "maximum generation":
            bytes = Self.forge(generation: .max, payload: Array(valid[32...]))
        case "invalid UTF-8":
            bytes = Self.forge(
                generation: 5,
                payload: [9, 1, 0, 0, 0, 1, 0, 0, 0, 0xFF, 2] + [UInt8](repeating: 0, count: 8)
            )
        case "date out of range":
            var payload: [UInt8] = [9, 1, 0, 0, 0, 1, 0, 0, 0, UInt8(ascii: "d"), 6]
            StoreFormat.appendLE(Double(1e300).bitPattern, into: &payload)
            bytes = Self.forge(generation: 5, payload: payload)
        default:
            var payload: [UInt8] = [9, 1, 0, 0, 0, 1, 0, 0, 0, UInt8(ascii: "n")]
            for _ in 0..<(DefaultsLimits.maximumNestingDepth + 1) { payload += [8, 1, 0, 0, 0] }
            payload += [5]
            bytes = Self.forge(generation: 5, payload: payload)
        }
        try Data(bytes).write(to: writer.storeURL)
        let log = LogCollector()
        let reader = try root.store(refresh: .statEveryRead, logger: log.logger)
        #expect(reader.string(forKey: "a") == "first", "\(kind)")
        #expect(log.entries.contains { $0.0 == .error && $0.1.contains("corrupt") }, "\(kind)")
        try reader.set("third", forKey: "a")
        try reader.increment("n")
        #expect(try root.store(refresh: .statEveryRead).string(forKey: "a") == "third")
    }

    @Test(
        "a seeded fuzz of store files: every mutation decodes to values the writer accepts, or is rejected"
    )
    func fuzzedStores() throws {
        let sample: [String: DefaultsValue] = [
            "s": "text ✓", "i": .int(-42), "d": 2.5, "t": true, "f": false,
            "date": .date(Date(timeIntervalSinceReferenceDate: 1000.25)),
            "data": .data(Data([0, 1, 255])),
            "a": [[], [:], ["x": [1, "y", .data(Data([7]))]]],
        ]
        let valid = try StoreFormat.encode(sample, generation: 99)
        var generator = SeededGenerator(seed: 1917)
        var decoded = 0
        var rejected = 0
        for trial in 0..<20_000 {
            var payload = Array(valid[32...])
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:
                    let at = Int.random(in: 0..<payload.count, using: &generator)
                    payload[at] = UInt8.random(in: 0...255, using: &generator)
                case 1:
                    let at = Int.random(in: 0..<payload.count, using: &generator)
                    payload[at] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
                case 2:
                    payload.removeLast(Int.random(in: 0..<payload.count, using: &generator))
                    if payload.isEmpty { payload = [9] }
                default:
                    let at = Int.random(in: 0...payload.count, using: &generator)
                    payload.insert(
                        contentsOf: (0..<Int.random(in: 1...9, using: &generator)).map { _ in
                            UInt8.random(in: 0...255, using: &generator)
                        },
                        at: at
                    )
                }
            }
            // Checksums recomputed: the mutation reaches the payload's parser.
            let bytes = Self.forge(generation: UInt64(trial), payload: payload)
            switch StoreFormat.decode(bytes, count: bytes.count) {
            case .success(let result):
                decoded += 1
                // What the reader accepts, the writer writes back unchanged.
                // (Compared as JSON text: a mutated double may be NaN, never equal to itself.)
                let again = try StoreFormat.encode(result.values, generation: 1)
                let back = try StoreFormat.decode(again, count: again.count).get().values
                #expect(
                    DefaultsValue.dictionary(back).jsonText()
                        == DefaultsValue.dictionary(result.values).jsonText()
                )
            case .failure:
                rejected += 1
            }
        }
        #expect(decoded > 100 && rejected > 100, "decoded \(decoded), rejected \(rejected)")
    }

    @Test(
        "a seeded fuzz of JSON text: every mutation parses to a value within the limits, or is a typed error"
    )
    func fuzzedJSON() throws {
        let valid = Array(
            #"{"a":[1,2.5,-3e2,true,false,"\u00e9\n"],"b":{"c":[[{"d":"x"}]]},"e":12345678901234567890}"#
                .utf8
        )
        var generator = SeededGenerator(seed: 2026)
        var parsed = 0
        for _ in 0..<20_000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                if Bool.random(using: &generator) {
                    bytes[at] = Array(#"[]{}",:0-.eE\u"#.utf8).randomElement(using: &generator)!
                } else {
                    bytes.insert(UInt8.random(in: 0...255, using: &generator), at: at)
                }
            }
            do {
                let value = try DefaultsValue(jsonData: Data(bytes))
                try DefaultsLimits.check(value)
                parsed += 1
            } catch {
                #expect(error is DefaultsValueParseError || error is DefaultsLimitError)
            }
        }
        #expect(parsed > 50)
    }

    @Test("change sequences end, and say why, when the suite's container is removed")
    func containerRemoved() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set(1, forKey: "k")
        let changes = store.changes(forKey: "k")
        try FileManager.default.removeItem(at: store.containerURL)
        var seen = 0
        for await _ in changes { seen += 1 }
        #expect(store.isContainerRemoved)
        #expect(seen <= 1)
    }

    @Test(
        "a commit waiting for another process's lock logs that it waits, then fails at its timeout having written nothing"
    )
    func lockTimeout() async throws {
        let root = try TemporaryRoot()
        let log = LogCollector()
        let store = try SharedStore(
            suite: "test",
            root: root.url,
            refresh: .statEveryRead,
            logger: log.logger,
            lockTimeout: .milliseconds(1500)
        )
        try store.set("before", forKey: "k")
        // --no-fork: the lock's holder is this process, which the test kills.
        let holder = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/flock"),
            [
                "--no-fork", store.containerURL.appendingPathComponent("defaults.lock").path,
                "-c", "echo locked; exec sleep 60",
            ]
        )
        defer { holder.signal(SIGKILL) }
        #expect(await holder.nextLine(timeout: 10) == "locked")
        let started = ContinuousClock.now
        #expect { try store.set("after", forKey: "k") } throws: {
            ($0 as? SharedStoreError)?.code == .lockTimeout
        }
        #expect(ContinuousClock.now - started >= .milliseconds(1500))
        let waiting = log.entries.filter {
            $0.0 == .warning && $0.1.contains("waiting for another process")
        }
        #expect(waiting.count == 1)
        #expect(waiting.first?.2["holder"] == "process \(holder.processIdentifier)")
        #expect(try root.store(refresh: .statEveryRead).string(forKey: "k") == "before")
        _ = await holder.stop(with: SIGKILL)
        try store.set("after", forKey: "k")
        #expect(try root.store(refresh: .statEveryRead).string(forKey: "k") == "after")
    }
}

/// A small deterministic generator for the fuzz tests (splitmix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
