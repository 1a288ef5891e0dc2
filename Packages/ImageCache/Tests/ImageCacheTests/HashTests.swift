import Foundation
import Testing

@testable import ImageCache

@Suite("Hashes and keys")
struct HashTests {
    static let vectors: [([UInt8], UInt64)] = [
        (Array("".utf8), 0xEF46_DB37_51D8_E999),
        (Array("a".utf8), 0xD24E_C4F1_A98C_6E5B),
        (Array("abc".utf8), 0x44BC_2CF5_AD77_0999),
        (Array("Nobody inspects the spammish repetition".utf8), 0xFBCE_A83C_8A37_8BF1),
        ((0..<768).map { UInt8($0 & 0xFF) }, 0x8E03_C838_C596_036F),
    ]

    // Vectors from the reference implementation (python-xxhash 3.x).
    @Test("XXH64 matches the reference implementation", arguments: vectors)
    func xxh64(input: [UInt8], expected: UInt64) {
        #expect(input.withUnsafeBytes { XXHash64.hash($0) } == expected)
    }

    @Test("XXH64 uses its seed")
    func seeded() {
        #expect(
            XXHash64.hash(Array("abc".utf8), seed: 0x5348_504F_464C_4F4F) == 0x23BD_3911_5DDE_E793
        )
    }

    @Test("a key's file name is stable, 32 hex digits, and differs between keys")
    func fileNames() {
        let first = CacheKey("https://images.example/1.png")
        #expect(first.fileName.count == 32)
        #expect(first.fileName.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(first.fileName == CacheKey("https://images.example/1.png").fileName)
        #expect(first.fileName != CacheKey("https://images.example/2.png").fileName)
        #expect(first.relativePath == String(first.fileName.prefix(2)) + "/" + first.fileName)
        #expect(parseHexName(first.fileName).map { hexName($0.0, $0.1) } == first.fileName)
    }

    @Test("keys are equal by text")
    func equality() {
        #expect(CacheKey("a") == CacheKey("a"))
        #expect(CacheKey("a") != CacheKey("b"))
        #expect(
            CacheKey(url: URL(string: "https://x.example/a?b=1")!)
                == CacheKey("https://x.example/a?b=1")
        )
    }
}
