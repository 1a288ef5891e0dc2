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

    /// Padding rule for ``decode(_:padding:)``.
    enum Padding { case required, absent }

    /// Maps an ASCII byte to its 6-bit value; 255 for bytes outside the standard alphabet.
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Decodes standard base64 (RFC 4648 §4: `A–Z a–z 0–9 + /`) strictly: no other
    /// character (so no mix with the URL-safe `-`/`_` alphabet), padding only at the end and
    /// only to a multiple of four, unused trailing bits zero (one encoding per byte string).
    /// - Parameter padding: whether `=` padding is required (headers, JSON) or must be absent
    ///   (the PHC-style password hash strings).
    static func decode(_ text: some StringProtocol, padding: Padding = .required) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var symbols = 0
        var pad = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") {
                pad += 1
                continue
            }
            // A symbol after padding, or outside the standard alphabet.
            let value = table[Int(byte)]
            guard pad == 0, value < 64 else { return nil }
            symbols += 1
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        guard symbols % 4 != 1 else { return nil }
        switch padding {
        case .required:
            guard (symbols + pad) % 4 == 0, pad == (4 - symbols % 4) % 4 else { return nil }
        case .absent:
            guard pad == 0 else { return nil }
        }
        // Leftover bits must be zero (one encoding per byte string).
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
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
