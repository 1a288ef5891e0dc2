public import Foundation
import Models

/// JSON as every app of the suite prints it, through one encoder: keys sorted (JSONEncoder
/// keeps no declaration order, and output must not change from run to run), slashes
/// unescaped, instants in the suite's one RFC 3339 form (Models' `RFC3339`,
/// `2026-11-23T07:05:09.120Z`), data as base64, non-finite numbers as strings.
///
/// The text stays data, but nothing in it can drive a terminal it is printed to: DEL, C1
/// controls, bidirectional controls and the line and paragraph separators inside strings are
/// written as `\u` escapes (JSONEncoder passes them raw), as C0 controls already are. Pretty
/// output separates keys from values with `": "`, as `jq` does.
public enum JSONOutput {
    /// An encoder with the suite's settings (`pretty` for people). Prefer ``data(_:pretty:)``,
    /// which also escapes what JSONEncoder leaves raw.
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = ModelsJSON.makeEncoder()
        if pretty { encoder.outputFormatting.insert(.prettyPrinted) }
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "+infinity",
            negativeInfinity: "-infinity",
            nan: "nan"
        )
        return encoder
    }

    /// `value` as JSON text bytes (no newline).
    /// - Throws: the encoder's error (a value that cannot be encoded).
    public static func data(_ value: some Encodable, pretty: Bool = false) throws -> Data {
        Data(clean(try encoder(pretty: pretty).encode(value), pretty: pretty))
    }

    /// `value` as JSON text (no newline), pretty for people when `pretty`.
    /// - Throws: the encoder's error (a value that cannot be encoded).
    public static func text(_ value: some Encodable, pretty: Bool = false) throws -> String {
        String(decoding: try data(value, pretty: pretty), as: UTF8.self)
    }

    /// `value` as one line of JSON text (no newline).
    /// - Throws: the encoder's error (a value that cannot be encoded).
    public static func line(_ value: some Encodable) throws -> String {
        try text(value)
    }

    /// The encoder's bytes with unsafe scalars escaped and, when `pretty`, `" : "` outside
    /// strings written `": "`.
    static func clean(_ bytes: Data, pretty: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var inString = false
        var escaped = false
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                } else if byte >= 0x7F {
                    // A scalar of 1 to 4 bytes: escape it when it is unsafe.
                    let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                    let end = min(bytes.endIndex, index + length)
                    if let scalar = String(decoding: bytes[index..<end], as: UTF8.self)
                        .unicodeScalars.first, TextSafety.isUnsafeInJSON(scalar)
                    {
                        out += Array(TextSafety.jsonEscape(scalar).utf8)
                        index = end
                        continue
                    }
                    out += bytes[index..<end]
                    index = end
                    continue
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if pretty, byte == UInt8(ascii: "{") || byte == UInt8(ascii: "["),
                let close = emptyContainerEnd(bytes, from: index)
            {
                // JSONEncoder prints an empty object as `{`, a blank line and `}`.
                out += [byte, bytes[close]]
                index = close + 1
                continue
            } else if pretty, byte == UInt8(ascii: " "), index + 2 < bytes.endIndex,
                bytes[index + 1] == UInt8(ascii: ":"), bytes[index + 2] == UInt8(ascii: " ")
            {
                out += [UInt8(ascii: ":"), UInt8(ascii: " ")]
                index += 3
                continue
            }
            out.append(byte)
            index += 1
        }
        return out
    }

    /// The index of the `}` or `]` that closes the container opening at `open` when only
    /// white space lies between them.
    private static func emptyContainerEnd(_ bytes: Data, from open: Int) -> Int? {
        let closing = bytes[open] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var index = open + 1
        while index < bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                index += 1
            case closing: return index
            default: return nil
            }
        }
        return nil
    }
}
