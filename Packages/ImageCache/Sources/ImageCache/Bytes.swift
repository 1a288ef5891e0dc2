// The disk cache's own byte-level helpers: the boot identity, little-endian fields and
// entry names. The POSIX loops themselves are Plumbing's (`POSIX`).
import Foundation
internal import Plumbing

/// This boot's identity (Linux's random boot id), or zeros when unknown. After a reboot every
/// process that held a reservation or was mid-update is gone, and writes the kernel had not
/// flushed may be lost, so the disk index is recounted once.
let currentBootID: (UInt64, UInt64) = {
    guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
    else { return (0, 0) }
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    let bytes = Array(trimmed.utf8)
    return bytes.withUnsafeBytes {
        (XXHash64.hash($0, seed: 1), XXHash64.hash($0, seed: 2))
    }
}()

/// Little-endian field access in byte buffers.
extension UnsafeMutableRawBufferPointer {
    @inline(__always)
    func store64(_ value: UInt64, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self)
    }
    @inline(__always)
    func store32(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
    }
    @inline(__always)
    func store16(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt16.self)
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always)
    func load64(at offset: Int) -> UInt64 {
        UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    @inline(__always)
    func load32(at offset: Int) -> UInt32 {
        UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    @inline(__always)
    func load16(at offset: Int) -> UInt16 {
        UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
}

/// 32 hex digits for a 128-bit hash: the entry's file name.
func hexName(_ high: UInt64, _ low: UInt64) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var bytes = [UInt8](repeating: 0, count: 32)
    for index in 0..<16 {
        let shift = UInt64(60 - index * 4)
        bytes[index] = digits[Int((high >> shift) & 0xF)]
        bytes[index + 16] = digits[Int((low >> shift) & 0xF)]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The 128-bit hash back from a 32-hex-digit file name; nil for any other name.
func parseHexName(_ name: String) -> (UInt64, UInt64)? {
    let bytes = Array(name.utf8)
    guard bytes.count == 32 else { return nil }
    var high: UInt64 = 0
    var low: UInt64 = 0
    for (index, byte) in bytes.enumerated() {
        let value: UInt64
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): value = UInt64(byte - UInt8(ascii: "a") + 10)
        default: return nil
        }
        if index < 16 { high = high << 4 | value } else { low = low << 4 | value }
    }
    guard high != 0 || low != 0 else { return nil }
    return (high, low)
}

/// 16 hex digits: a reservation's temporary file name.
func hexID(_ id: UInt64) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var bytes = [UInt8](repeating: 0, count: 16)
    for index in 0..<16 {
        bytes[index] = digits[Int((id >> UInt64(60 - index * 4)) & 0xF)]
    }
    return String(decoding: bytes, as: UTF8.self)
}
