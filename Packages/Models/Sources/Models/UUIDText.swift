public import Foundation

/// Hand-written UUID text conversion for the hot JSON paths. Foundation's `UUID(uuidString:)`
/// and `uuidString` go through `sscanf`/`snprintf` on Linux, which showed up as the largest
/// cost of decoding reservations; these produce and accept the same text (uppercase out,
/// either case in).
enum UUIDText {
    private static let hex = Array("0123456789ABCDEF".utf8)

    static func string(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { buffer in
                var out = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        buffer[out] = UInt8(ascii: "-")
                        out += 1
                    }
                    buffer[out] = hex[Int(byte >> 4)]
                    buffer[out + 1] = hex[Int(byte & 15)]
                    out += 2
                }
                return out
            }
        }
    }

    static func parse(_ text: String) -> UUID? {
        var copy = text
        return copy.withUTF8 { bytes -> UUID? in
            guard bytes.count == 36 else { return nil }
            var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let ok = withUnsafeMutableBytes(of: &raw) { out -> Bool in
                var i = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        guard bytes[i] == UInt8(ascii: "-") else { return false }
                        i += 1
                    }
                    guard let high = nibble(bytes[i]), let low = nibble(bytes[i + 1]) else {
                        return false
                    }
                    out[index] = high << 4 | low
                    i += 2
                }
                return true
            }
            return ok ? UUID(uuid: raw) : nil
        }
    }

    @inline(__always)
    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

extension KeyedDecodingContainer {
    func decodeUUID(_ key: Key) throws -> UUID {
        let text = try decode(String.self, forKey: key)
        guard let uuid = UUIDText.parse(text) else {
            throw wrapped(
                ValidationError(
                    field: key.stringValue,
                    code: .invalidFormat,
                    reason: "\"\(text.prefix(40))\" is not a UUID"
                ),
                at: key
            )
        }
        return uuid
    }
}

extension KeyedEncodingContainer {
    mutating func encodeUUID(_ uuid: UUID, forKey key: Key) throws {
        try encode(UUIDText.string(uuid), forKey: key)
    }
}

extension UUID {
    /// `init(uuidString:)` without Foundation's `sscanf` on Linux, for hot paths (database
    /// rows, request paths): the same text, 36 characters with hyphens after the 8th, 12th,
    /// 16th and 20th hex digit, either case.
    public init?(parsing text: String) {
        guard let id = UUIDText.parse(text) else { return nil }
        self = id
    }
}
