import Foundation
import Testing

@testable import SharedDefaults

@Suite("Store format, JSON and property lists")
struct FormatTests {
    static let sample: [String: DefaultsValue] = [
        "s": "text with \u{1F600} and \"quotes\"",
        "i": .int(Int.min),
        "d": .double(-0.1),
        "t": true,
        "f": false,
        "date": .date(Date(timeIntervalSinceReferenceDate: -1.5)),
        "data": .data(Data(repeating: 7, count: 300)),
        "a": [[], [:], ["x": [1, 2]]],
    ]

    @Test("CRC-32 matches the standard check value")
    func crcCheckValue() {
        let bytes = Array("123456789".utf8)
        #expect(bytes.withUnsafeBytes { CRC32.checksum($0) } == 0xCBF4_3926)
        let long = [UInt8](repeating: 0xA5, count: 1000)
        var bytewise: UInt32 = 0xFFFF_FFFF
        for byte in long {
            bytewise ^= UInt32(byte)
            for _ in 0..<8 {
                bytewise = (bytewise & 1) != 0 ? (bytewise >> 1) ^ 0xEDB8_8320 : bytewise >> 1
            }
        }
        #expect(long.withUnsafeBytes { CRC32.checksum($0) } == ~bytewise)
    }

    @Test("encoding then decoding gives the same values and generation")
    func binaryRoundTrip() throws {
        let bytes = try StoreFormat.encode(Self.sample, generation: 42)
        let decoded = try StoreFormat.decode(bytes, count: bytes.count).get()
        #expect(decoded.header.generation == 42)
        #expect(decoded.values == Self.sample)
    }

    @Test(
        "damaged store bytes are rejected, never crash",
        arguments: [
            "empty", "bad magic", "flipped payload bit", "flipped header bit", "truncated",
            "extra bytes", "zeroed",
        ]
    )
    func damagedBytes(damage: String) {
        var bytes = try! StoreFormat.encode(Self.sample, generation: 1)
        switch damage {
        case "empty": bytes = []
        case "bad magic": bytes[0] = 0x58
        case "flipped payload bit": bytes[bytes.count - 1] ^= 1
        case "flipped header bit": bytes[9] ^= 0x10
        case "truncated": bytes.removeLast(5)
        case "extra bytes": bytes.append(0)
        default: bytes = [UInt8](repeating: 0, count: bytes.count)
        }
        guard case .failure = StoreFormat.decode(bytes, count: bytes.count) else {
            Issue.record("\(damage): damaged bytes decoded")
            return
        }
    }

    @Test("a payload with a valid checksum but impossible counts is rejected")
    func hostilePayload() {
        // A dictionary claiming 2^32-1 entries, checksummed correctly.
        var payload: [UInt8] = [9, 0xFF, 0xFF, 0xFF, 0xFF]
        var bytes = try! StoreFormat.encode([:], generation: 1)
        bytes.removeSubrange(StoreFormat.headerSize...)
        let crc = payload.withUnsafeBytes { CRC32.checksum($0) }
        var header = Array(bytes[0..<16])
        StoreFormat.appendLE(UInt64(payload.count), into: &header)
        StoreFormat.appendLE(crc, into: &header)
        StoreFormat.appendLE(header.withUnsafeBytes { CRC32.checksum($0) }, into: &header)
        payload.insert(contentsOf: header, at: 0)
        guard case .failure(let error) = StoreFormat.decode(payload, count: payload.count) else {
            Issue.record("hostile payload decoded")
            return
        }
        #expect(error.description.contains("truncated"))
    }

    @Test("JSON text round-trips and keeps integers apart from doubles")
    func jsonRoundTrip() throws {
        let text =
            #"{"a":[1,2.5,-3e2,true,false],"b":{"c":"\u00e9\n\ud83d\ude00"},"big":12345678901234567890}"#
        let value = try DefaultsValue(jsonText: text)
        #expect(value.dictionaryValue?["a"] == [1, 2.5, -300.0, true, false])
        #expect(value.dictionaryValue?["b"] == ["c": "é\n😀"])
        #expect(value.dictionaryValue?["big"] == .double(1.2345678901234567e19))
        #expect(try DefaultsValue(jsonText: value.jsonText()) == value)
        #expect(try DefaultsValue(jsonText: value.jsonText(pretty: true)) == value)
    }

    @Test(
        "invalid JSON is a typed error naming the problem",
        arguments: [
            "", "{", "[1,]", "{\"a\" 1}", "nul", "null", "\"\\x\"", "01", "[1] 2", "\"\u{01}\"",
        ]
    )
    func invalidJSON(text: String) {
        #expect(throws: DefaultsValueParseError.self) { try DefaultsValue(jsonText: text) }
    }

    @Test("dates and data are written to JSON as RFC 3339 strings and base64")
    func jsonDatesAndData() {
        let value: DefaultsValue = [
            "when": .date(Date(timeIntervalSince1970: 1_795_417_200)),
            "precise": .date(Date(timeIntervalSince1970: 1_795_417_200.25)),
            "bytes": .data(Data([1, 2, 3])),
        ]
        #expect(
            value.jsonText()
                == #"{"bytes":"AQID","precise":"2026-11-23T07:00:00.250Z","when":"2026-11-23T07:00:00Z"}"#
        )
    }

    @Test("an XML property list round-trips through Foundation's parser")
    func propertyListRoundTrip() throws {
        let value: DefaultsValue = [
            "s": "a < b & c",
            "i": 5,
            "d": 1.5,
            "t": true,
            "f": false,
            "date": .date(Date(timeIntervalSince1970: 1_795_417_200)),
            "data": .data(Data([0, 255])),
            "nested": ["list": [1, "x"], "empty": []],
        ]
        let xml = value.propertyListXML()
        #expect(xml.contains("<string>a &lt; b &amp; c</string>"))
        #expect(try DefaultsValue(propertyList: Data(xml.utf8)) == value)
    }

    @Test("ISO 8601 dates parse with and without fractions, offsets or time")
    func dateParsing() {
        #expect(
            DefaultsValue.parseDate("2026-11-23T07:00:00Z")
                == Date(timeIntervalSince1970: 1_795_417_200)
        )
        #expect(
            DefaultsValue.parseDate("2026-11-23T08:00:00+01:00")
                == DefaultsValue.parseDate("2026-11-23T07:00:00Z")
        )
        #expect(DefaultsValue.parseDate("2026-11-23T07:00:00.5Z") != nil)
        #expect(DefaultsValue.parseDate("2026-11-23") != nil)
        #expect(DefaultsValue.parseDate("yesterday") == nil)
    }
}
