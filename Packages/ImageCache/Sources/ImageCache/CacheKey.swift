public import Foundation

/// What the caches file an entry under: a string (normally a URL's absolute string) with a
/// 128-bit hash computed once.
///
/// The hash is the same in every process (XXH64 with two seeds), so it names the entry's file
/// in the shared disk cache, and the memory cache reuses it for its frequency sketch; so
/// looking a key up never hashes the string again.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The key's text.
    public let string: String
    /// The first half of the stable 128-bit hash.
    let high: UInt64
    /// The second half of the stable 128-bit hash.
    let low: UInt64

    /// Creates a key from any text.
    public init(_ string: String) {
        self.string = string
        var text = string
        let (high, low) = text.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            return (
                XXHash64.hash(raw, seed: 0x5348_4F50_464C_4F4F),
                XXHash64.hash(raw, seed: 0x494D_4147_4543_4143)
            )
        }
        // (0, 0) marks an empty slot in the disk index; no key may hash to it.
        self.high = high
        self.low = high == 0 && low == 0 ? 1 : low
    }

    /// Creates the key of a URL: its absolute string.
    public init(url: URL) {
        self.init(url.absoluteString)
    }

    /// The key's text.
    public var description: String { string }

    /// Equal keys have equal text; the hashes are compared first because they differ for
    /// almost every pair of different keys.
    public static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        lhs.high == rhs.high && lhs.low == rhs.low && lhs.string == rhs.string
    }

    /// Feeds the precomputed hash, never the text.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
    }

    /// Dictionary's hash of the key without running SipHash: the key already carries a
    /// 128-bit XXH64, so a multiply-xorshift with the table's seed suffices, and each table
    /// still orders its buckets differently. (The memory cache's hit path is a dictionary
    /// lookup; SipHash was a third of it.)
    public func _rawHashValue(seed: Int) -> Int {
        var mixed = (high ^ UInt64(truncatingIfNeeded: seed)) &* 0x9E37_79B9_7F4A_7C15
        mixed ^= mixed &>> 32
        return Int(truncatingIfNeeded: mixed)
    }

    /// 32 lowercase hex digits: the entry's file name in the disk cache.
    var fileName: String { hexName(high, low) }

    /// The entry's subdirectory in the disk cache: the first two hex digits (256 folders).
    var folderName: String { String(fileName.prefix(2)) }

    /// `ab/abcdef…`: the entry's path relative to the cache folder.
    var relativePath: String {
        let name = fileName
        return String(name.prefix(2)) + "/" + name
    }
}
