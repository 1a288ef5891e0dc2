/// Allocation-light base64 (RFC 4648 §4, padded) used on the signing hot path.
enum Base64 {
    static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8
    )

    /// Appends the base64 of `bytes` to `out`.
    @inline(__always)
    static func encode(_ bytes: UnsafeRawBufferPointer, into out: inout OutputBuffer) {
        alphabet.withUnsafeBufferPointer { table in
            var index = 0
            let count = bytes.count
            while index + 3 <= count {
                let value =
                    UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                    | UInt32(bytes[index + 2])
                out.append(table[Int(value >> 18 & 63)])
                out.append(table[Int(value >> 12 & 63)])
                out.append(table[Int(value >> 6 & 63)])
                out.append(table[Int(value & 63)])
                index += 3
            }
            let rest = count - index
            if rest == 1 {
                let value = UInt32(bytes[index]) << 16
                out.append(table[Int(value >> 18 & 63)])
                out.append(table[Int(value >> 12 & 63)])
                out.append(UInt8(ascii: "="))
                out.append(UInt8(ascii: "="))
            } else if rest == 2 {
                let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                out.append(table[Int(value >> 18 & 63)])
                out.append(table[Int(value >> 12 & 63)])
                out.append(table[Int(value >> 6 & 63)])
                out.append(UInt8(ascii: "="))
            }
        }
    }

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let array = Array(bytes)
        var out = OutputBuffer(capacity: (array.count + 2) / 3 * 4)
        array.withUnsafeBytes { encode($0, into: &out) }
        return out.string()
    }

    /// Decodes padded or unpadded standard base64; `nil` on any other character.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var sawPadding = false
        for byte in text.utf8 {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): sawPadding = true; continue
            default: return nil
            }
            if sawPadding { return nil }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }
}

/// A growable byte buffer for building header values without Foundation formatters.
struct OutputBuffer {
    var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inline(__always) mutating func append(_ byte: UInt8) { bytes.append(byte) }

    @inline(__always) mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func append(contentsOf other: [UInt8]) {
        bytes.append(contentsOf: other)
    }

    /// Appends a non-negative or negative integer in decimal.
    mutating func append(decimal value: Int64) {
        if value < 0 {
            append(UInt8(ascii: "-"))
            append(unsignedDecimal: UInt64(0 &- value))
        } else {
            append(unsignedDecimal: UInt64(value))
        }
    }

    mutating func append(unsignedDecimal value: UInt64) {
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    func string() -> String { String(decoding: bytes, as: UTF8.self) }
}
