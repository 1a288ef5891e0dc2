// libFuzzer harness for SharedDefaults' readers: the store file decoder and the JSON parser.
// Built by scripts/fuzz.sh together with SharedDefaults' value and format sources (one module,
// so the internal decoder is reachable), with -sanitize=fuzzer,address. A crash, a trap or a
// broken invariant below stops the fuzzer with the input that caused it.
import Foundation

/// libFuzzer's entry point: decodes `data` as a store file or JSON and checks the invariants.
@_cdecl("LLVMFuzzerTestOneInput")
public func storeFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let mode = data[0] % 3
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch mode {
    case 0:
        // A payload under a header whose lengths and checksums hold: the value parser.
        var header: [UInt8] = Array("SFDS".utf8)
        StoreFormat.appendLE(UInt16(1), into: &header)
        StoreFormat.appendLE(UInt16(0), into: &header)
        StoreFormat.appendLE(UInt64(7), into: &header)
        StoreFormat.appendLE(UInt64(bytes.count), into: &header)
        StoreFormat.appendLE(bytes.withUnsafeBytes { CRC32.checksum($0) }, into: &header)
        StoreFormat.appendLE(header.withUnsafeBytes { CRC32.checksum($0) }, into: &header)
        checkStore(header + bytes)
    case 1:
        // Whole files, header included.
        checkStore(bytes)
    default:
        // JSON as `write -json` and `import` read it.
        guard
            let value = try? DefaultsValue(
                jsonData: Data(bytes),
                maximumNestingDepth: DefaultsLimits.maximumNestingDepth + 1
            )
        else { return 0 }
        let text = value.jsonText()
        guard
            let again = try? DefaultsValue(
                jsonText: text,
                maximumNestingDepth: DefaultsLimits.maximumNestingDepth + 1
            )
        else { fatalError("the JSON writer wrote text its parser refuses: \(text)") }
        precondition(again.jsonText() == text, "JSON does not round-trip")
        _ = value.propertyListXML()
    }
    return 0
}

/// Whatever the reader accepts, the writer writes back, and it reads the same.
func checkStore(_ bytes: [UInt8]) {
    guard case .success(let decoded) = StoreFormat.decode(bytes, count: bytes.count) else { return }
    let suite = DefaultsValue.dictionary(decoded.values)
    guard
        let encoded = try? StoreFormat.encode(decoded.values, generation: decoded.header.generation)
    else { fatalError("the writer refuses what the reader accepted") }
    guard case .success(let again) = StoreFormat.decode(encoded, count: encoded.count) else {
        fatalError("the reader refuses what the writer wrote")
    }
    precondition(
        DefaultsValue.dictionary(again.values).jsonText() == suite.jsonText(),
        "store does not round-trip"
    )
    _ = suite.jsonText(pretty: true)
    _ = suite.propertyListXML()
}
