import Foundation

/// The on-disk form of a store (documented in the package README, "On-disk format").
///
/// A 32-byte header, all integers little-endian:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 4 | magic `SFDS` |
/// | 4 | 2 | format version (1) |
/// | 6 | 2 | flags (0) |
/// | 8 | 8 | generation: strictly increasing per commit |
/// | 16 | 8 | payload length in bytes |
/// | 24 | 4 | CRC-32 (IEEE) of the payload |
/// | 28 | 4 | CRC-32 of header bytes 0..<28 |
///
/// then the payload: one tagged value, the top-level dictionary. Tags: 1 string (u32 byte
/// count, UTF-8), 2 int (i64), 3 double (IEEE bits, u64), 4 false, 5 true, 6 date (seconds
/// since 2001-01-01 as IEEE bits, u64, exactly `Date.timeIntervalSinceReferenceDate`), 7 data
/// (u32 count, bytes), 8 array (u32 count, values), 9 dictionary (u32 count, then per entry a
/// u32 key byte count, key UTF-8, value; in no particular order).
///
/// The writer and the reader keep the same ``DefaultsLimits``: the top-level dictionary plus
/// ``DefaultsLimits/maximumNestingDepth`` levels, ``DefaultsLimits/maximumStoreBytes`` in
/// all, dates in the years 1 to 9999, UTF-8 strings; the reader also refuses a generation
/// above ``maximumGeneration``, which no commit can reach.
enum StoreFormat {
    static let magic: [UInt8] = Array("SFDS".utf8)
    static let version: UInt16 = 1
    static let headerSize = 32
    /// Containers the payload may nest: the suite's dictionary and its values' levels.
    static let maximumDepth = DefaultsLimits.maximumNestingDepth + 1
    /// 2^62: commits use microseconds since 1970 (about 2^51 today), so a larger generation
    /// is damage, and refusing it keeps `generation + 1` from ever overflowing.
    static let maximumGeneration: UInt64 = 1 << 62

    struct Header: Equatable {
        var generation: UInt64
        var payloadLength: UInt64
        var payloadCRC: UInt32
    }

    enum Tag: UInt8 {
        case string = 1, int, double, boolFalse, boolTrue, date, data, array, dictionary
    }

    // MARK: Encoding

    /// The store's bytes.
    /// - Throws: ``DefaultsLimitError`` for a value nested too deeply, a date out of range,
    ///   or a store larger than ``DefaultsLimits/maximumStoreBytes``; checked before any
    ///   byte is written anywhere.
    static func encode(_ values: [String: DefaultsValue], generation: UInt64)
        throws(DefaultsLimitError) -> [UInt8]
    {
        var encoder = Encoder()
        encoder.out.reserveCapacity(headerSize + 64 + values.count * 32)
        encoder.out.append(contentsOf: [UInt8](repeating: 0, count: headerSize))
        try encoder.dictionary(values, depth: 0, key: nil)
        guard encoder.out.count <= DefaultsLimits.maximumStoreBytes else {
            throw .storeTooLarge(bytes: encoder.out.count)
        }
        var out = encoder.out
        let payloadLength = UInt64(out.count - headerSize)
        let payloadCRC = out.withUnsafeBytes {
            CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[headerSize...]))
        }
        var header: [UInt8] = magic
        appendLE(version, into: &header)
        appendLE(UInt16(0), into: &header)
        appendLE(generation, into: &header)
        appendLE(payloadLength, into: &header)
        appendLE(payloadCRC, into: &header)
        let headerCRC = header.withUnsafeBytes { CRC32.checksum($0) }
        appendLE(headerCRC, into: &header)
        out.replaceSubrange(0..<headerSize, with: header)
        return out
    }

    @inline(__always)
    static func appendLE<T: FixedWidthInteger>(_ value: T, into out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private struct Encoder {
        var out: [UInt8] = []

        /// Stops early once the limit is passed, so a huge value is not copied in full first.
        mutating func checkSize() throws(DefaultsLimitError) {
            if out.count > DefaultsLimits.maximumStoreBytes {
                throw .storeTooLarge(bytes: out.count)
            }
        }

        mutating func count(_ count: Int) throws(DefaultsLimitError) {
            // The size limit (64 MiB) keeps every count far below 2^32.
            guard let count = UInt32(exactly: count), Int(count) <= DefaultsLimits.maximumStoreBytes
            else { throw .storeTooLarge(bytes: count) }
            StoreFormat.appendLE(count, into: &out)
        }

        mutating func string(_ string: String) throws(DefaultsLimitError) {
            try count(string.utf8.count)
            out.append(contentsOf: string.utf8)
            try checkSize()
        }

        mutating func dictionary(_ entries: [String: DefaultsValue], depth: Int, key: String?)
            throws(DefaultsLimitError)
        {
            guard depth < StoreFormat.maximumDepth else { throw .tooDeep(key: key) }
            out.append(Tag.dictionary.rawValue)
            try count(entries.count)
            for (entryKey, value) in entries {
                try string(entryKey)
                try self.value(value, depth: depth + 1, key: key ?? entryKey)
            }
        }

        mutating func value(_ value: DefaultsValue, depth: Int, key: String?)
            throws(DefaultsLimitError)
        {
            switch value {
            case .string(let text):
                out.append(Tag.string.rawValue)
                try string(text)
            case .int(let int):
                out.append(Tag.int.rawValue)
                StoreFormat.appendLE(Int64(int), into: &out)
            case .double(let double):
                out.append(Tag.double.rawValue)
                StoreFormat.appendLE(double.bitPattern, into: &out)
            case .bool(let bool):
                out.append(bool ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue)
            case .date(let date):
                guard DefaultsLimits.isStorable(date) else {
                    throw .dateOutOfRange(key: key, date: date)
                }
                out.append(Tag.date.rawValue)
                StoreFormat.appendLE(date.timeIntervalSinceReferenceDate.bitPattern, into: &out)
            case .data(let data):
                out.append(Tag.data.rawValue)
                try count(data.count)
                out.append(contentsOf: data)
                try checkSize()
            case .array(let elements):
                guard depth < StoreFormat.maximumDepth else { throw .tooDeep(key: key) }
                out.append(Tag.array.rawValue)
                try count(elements.count)
                for element in elements { try self.value(element, depth: depth + 1, key: key) }
            case .dictionary(let entries):
                try dictionary(entries, depth: depth, key: key)
            }
        }
    }

    // MARK: Decoding

    /// Why bytes are not a valid store.
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    static func decodeHeader(_ bytes: UnsafeRawBufferPointer) throws(Invalid) -> Header {
        guard bytes.count >= headerSize else {
            throw Invalid(description: "file is \(bytes.count) bytes, shorter than the header")
        }
        guard bytes.prefix(4).elementsEqual(magic) else {
            throw Invalid(description: "bad magic (not a SharedDefaults store)")
        }
        let headerCRC = readLE(UInt32.self, bytes, 28)
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28])) == headerCRC else {
            throw Invalid(description: "header checksum mismatch")
        }
        let version = readLE(UInt16.self, bytes, 4)
        guard version == Self.version else {
            throw Invalid(description: "unsupported format version \(version)")
        }
        let header = Header(
            generation: readLE(UInt64.self, bytes, 8),
            payloadLength: readLE(UInt64.self, bytes, 16),
            payloadCRC: readLE(UInt32.self, bytes, 24)
        )
        guard header.generation <= maximumGeneration else {
            throw Invalid(description: "generation \(header.generation) is out of range")
        }
        guard header.payloadLength <= UInt64(DefaultsLimits.maximumStoreBytes - headerSize) else {
            throw Invalid(
                description:
                    "payload length \(header.payloadLength) is more than the \(DefaultsLimits.maximumStoreBytes)-byte limit"
            )
        }
        return header
    }

    struct Decoded {
        var header: Header
        var values: [String: DefaultsValue]
    }

    /// Decodes the first `count` bytes of `bytes`.
    static func decode(_ bytes: [UInt8], count: Int) -> Result<Decoded, Invalid> {
        bytes.withUnsafeBytes { buffer in
            do {
                return .success(try decode(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
            } catch let error as Invalid {
                return .failure(error)
            } catch {
                return .failure(Invalid(description: "\(error)"))
            }
        }
    }

    /// Decodes just a header.
    static func decodeHeader(_ bytes: [UInt8]) -> Result<Header, Invalid> {
        bytes.withUnsafeBytes { buffer in
            do {
                return .success(try decodeHeader(buffer))
            } catch let error as Invalid {
                return .failure(error)
            } catch {
                return .failure(Invalid(description: "\(error)"))
            }
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws(Invalid) -> Decoded {
        let header = try decodeHeader(bytes)
        guard header.payloadLength == UInt64(bytes.count - headerSize) else {
            throw Invalid(
                description:
                    "payload is \(bytes.count - headerSize) bytes, header says \(header.payloadLength)"
            )
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
        guard CRC32.checksum(payload) == header.payloadCRC else {
            throw Invalid(description: "payload checksum mismatch")
        }
        var reader = Reader(bytes: payload)
        guard case .dictionary(let values) = try reader.value(depth: 0) else {
            throw Invalid(description: "top level is not a dictionary")
        }
        guard reader.offset == payload.count else {
            throw Invalid(description: "trailing bytes after the payload")
        }
        return Decoded(header: header, values: values)
    }

    @inline(__always)
    static func readLE<T: FixedWidthInteger>(_: T.Type, _ bytes: UnsafeRawBufferPointer, _ at: Int)
        -> T
    {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: T.self))
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func need(_ count: Int) throws(Invalid) {
            guard count >= 0, bytes.count - offset >= count else {
                throw Invalid(description: "truncated payload at byte \(offset)")
            }
        }

        mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(Invalid) -> T {
            try need(MemoryLayout<T>.size)
            let value = StoreFormat.readLE(T.self, bytes, offset)
            offset += MemoryLayout<T>.size
            return value
        }

        mutating func count() throws(Invalid) -> Int {
            let count = Int(try integer(UInt32.self))
            // Every element takes at least one byte, so a larger count is corrupt.
            try need(count)
            return count
        }

        mutating func string() throws(Invalid) -> String {
            let count = try count()
            guard
                let string = String(
                    validating: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]),
                    as: UTF8.self
                )
            else { throw Invalid(description: "a string at byte \(offset) is not valid UTF-8") }
            offset += count
            return string
        }

        func checkDepth(_ depth: Int) throws(Invalid) {
            guard depth < StoreFormat.maximumDepth else {
                throw Invalid(
                    description:
                        "values nest more than \(DefaultsLimits.maximumNestingDepth) levels deep"
                )
            }
        }

        mutating func value(depth: Int) throws(Invalid) -> DefaultsValue {
            let rawTag = try integer(UInt8.self)
            guard let tag = Tag(rawValue: rawTag) else {
                throw Invalid(description: "unknown value tag \(rawTag) at byte \(offset - 1)")
            }
            switch tag {
            case .string: return .string(try string())
            case .int: return .int(Int(truncatingIfNeeded: try integer(Int64.self)))
            case .double: return .double(Double(bitPattern: try integer(UInt64.self)))
            case .boolFalse: return .bool(false)
            case .boolTrue: return .bool(true)
            case .date:
                let date = Date(
                    timeIntervalSinceReferenceDate: Double(bitPattern: try integer(UInt64.self))
                )
                guard DefaultsLimits.isStorable(date) else {
                    throw Invalid(description: "a date at byte \(offset - 8) is out of range")
                }
                return .date(date)
            case .data:
                let count = try count()
                let data = Data(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
                offset += count
                return .data(data)
            case .array:
                try checkDepth(depth)
                let count = try count()
                var elements: [DefaultsValue] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try value(depth: depth + 1)) }
                return .array(elements)
            case .dictionary:
                try checkDepth(depth)
                let count = try count()
                var entries: [String: DefaultsValue] = [:]
                entries.reserveCapacity(count)
                for _ in 0..<count {
                    let key = try string()
                    entries[key] = try value(depth: depth + 1)
                }
                return .dictionary(entries)
            }
        }
    }
}

/// CRC-32 (IEEE 802.3, as zlib), slicing-by-8.
enum CRC32 {
    static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            tables[0][index] = crc
        }
        for index in 0..<256 {
            var crc = tables[0][index]
            for slice in 1..<8 {
                crc = tables[0][Int(crc & 0xFF)] ^ (crc >> 8)
                tables[slice][index] = crc
            }
        }
        return tables
    }()
    static let flat: [UInt32] = tables.flatMap { $0 }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        flat.withUnsafeBufferPointer { table in
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                let low =
                    UInt32(
                        littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self)
                    ) ^ crc
                let high = UInt32(
                    littleEndian: bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self)
                )
                crc =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return ~crc
    }
}
