import Foundation
internal import Plumbing

/// The format of one disk cache entry: a 40-byte header, the key, the metadata, the body.
///
/// ```
/// 0  "SFIE"                4  version (1)        6  flags (0)
/// 8  key length (u32)      12 metadata length (u32)
/// 16 body length (u64)     24 XXH64 of the body
/// 32 XXH64 of the header (with this field zero), the key and the metadata
/// 40 key, metadata, body
/// ```
/// A file whose size is not exactly the sum, or whose checksums do not match, is corrupt or
/// was cut short, and is never returned.
enum EntryFile {
    static let magic: UInt32 = 0x4549_4653  // "SFIE" little-endian
    static let version: UInt16 = 1
    static let headerSize = 40
    /// Bytes read with the first `pread`: the header, key and metadata of almost every entry.
    static let firstReadSize = 2048

    /// The header, key and metadata, ready to be written before the body.
    static func encodeHead(key: CacheKey, metadata: Data, body: Data) -> [UInt8] {
        let keyBytes = Array(key.string.utf8)
        let bodyChecksum = body.withUnsafeBytes { XXHash64.hash($0) }
        var head = [UInt8](repeating: 0, count: headerSize + keyBytes.count + metadata.count)
        head.withUnsafeMutableBytes { raw in
            raw.store32(magic, at: 0)
            raw.store16(version, at: 4)
            raw.store16(0, at: 6)
            raw.store32(UInt32(keyBytes.count), at: 8)
            raw.store32(UInt32(metadata.count), at: 12)
            raw.store64(UInt64(body.count), at: 16)
            raw.store64(bodyChecksum, at: 24)
            keyBytes.withUnsafeBytes {
                raw.baseAddress!.advanced(by: headerSize).copyMemory(
                    from: $0.baseAddress!,
                    byteCount: $0.count
                )
            }
            metadata.withUnsafeBytes { bytes in
                if bytes.count > 0 {
                    raw.baseAddress!.advanced(by: headerSize + keyBytes.count)
                        .copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                }
            }
            raw.store64(XXHash64.hash(UnsafeRawBufferPointer(raw)), at: 32)
        }
        return head
    }

    /// The size of an entry file.
    static func size(key: CacheKey, metadata: Data, body: Data) -> Int {
        headerSize + key.string.utf8.count + metadata.count + body.count
    }

    enum ReadResult {
        case entry(metadata: Data, body: Data)
        /// A valid entry of another key with the same 128-bit hash (never seen in practice).
        case otherKey
        case corrupt(String)
        /// A read failed with `errno`.
        case failed(Int32)
    }

    /// Reads and checks the entry in `fd`, whose size is `size`.
    static func read(_ fd: Int32, size: Int, key: CacheKey) -> ReadResult {
        guard size >= headerSize else {
            return .corrupt("it has \(size) bytes, less than an entry header")
        }
        var head = [UInt8](repeating: 0, count: min(size, firstReadSize))
        let count = head.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
        if count < 0 { return .failed(errno) }
        guard count == head.count else { return .corrupt("it was cut short while being read") }
        let fields = head.withUnsafeBytes { raw in
            (
                raw.load32(at: 0), raw.load16(at: 4), Int(raw.load32(at: 8)),
                Int(raw.load32(at: 12)), raw.load64(at: 16), raw.load64(at: 24),
                raw.load64(at: 32)
            )
        }
        let (magic, version, keyLength, metadataLength, bodyLength64, bodyChecksum, headChecksum) =
            fields
        guard magic == Self.magic else { return .corrupt("it is not an ImageCache entry") }
        guard version == Self.version else {
            return .corrupt("it has entry format version \(version), not \(Self.version)")
        }
        let headLength = headerSize + keyLength + metadataLength
        guard bodyLength64 <= UInt64(Int.max - headLength),
            headLength + Int(bodyLength64) == size
        else {
            return .corrupt(
                "its header announces \(headLength + Int(min(bodyLength64, 1 << 40))) bytes but the file has \(size)"
            )
        }
        let bodyLength = Int(bodyLength64)
        if head.count < headLength {
            var rest = [UInt8](repeating: 0, count: headLength - head.count)
            let more = rest.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: head.count) }
            if more < 0 { return .failed(errno) }
            guard more == rest.count else { return .corrupt("it was cut short while being read") }
            head += rest
        }
        let computed = head.withUnsafeMutableBytes { raw -> UInt64 in
            raw.store64(0, at: 32)
            return XXHash64.hash(UnsafeRawBufferPointer(rebasing: raw[0..<headLength]))
        }
        guard computed == headChecksum else {
            return .corrupt("its header checksum does not match")
        }
        let keyMatches = key.string.utf8.elementsEqual(head[headerSize..<(headerSize + keyLength)])
        guard keyMatches else { return .otherKey }
        let metadata = Data(head[(headerSize + keyLength)..<headLength])
        // The body is read straight into its own buffer: no copy, no zero fill.
        guard let buffer = malloc(max(bodyLength, 1)) else { return .failed(ENOMEM) }
        let raw = UnsafeMutableRawBufferPointer(start: buffer, count: bodyLength)
        let bodyRead: Int
        if head.count > headLength {
            // Small entries: the first read already holds the body.
            let available = head.count - headLength
            head.withUnsafeBytes { bytes in
                raw.baseAddress!.copyMemory(
                    from: bytes.baseAddress! + headLength,
                    byteCount: available
                )
            }
            let rest = POSIX.preadFully(
                fd,
                UnsafeMutableRawBufferPointer(rebasing: raw[available...]),
                offset: headLength + available
            )
            bodyRead = rest < 0 ? -1 : available + rest
        } else {
            bodyRead = POSIX.preadFully(fd, raw, offset: headLength)
        }
        if bodyRead < 0 {
            let code = errno
            free(buffer)
            return .failed(code)
        }
        guard bodyRead == bodyLength else {
            free(buffer)
            return .corrupt("it was cut short while being read")
        }
        guard XXHash64.hash(UnsafeRawBufferPointer(raw)) == bodyChecksum else {
            free(buffer)
            return .corrupt("its body checksum does not match")
        }
        let body = Data(bytesNoCopy: buffer, count: bodyLength, deallocator: .free)
        return .entry(metadata: metadata, body: body)
    }
}

/// `ab/abcdef…`: an entry's path relative to the cache folder.
func entryPath(_ high: UInt64, _ low: UInt64) -> String {
    let name = hexName(high, low)
    return String(name.prefix(2)) + "/" + name
}
