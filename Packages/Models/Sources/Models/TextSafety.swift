/// The suite's one rule for characters that can drive a terminal or hide what text says:
/// controls (C0, DEL, C1), bidirectional controls and the other invisible format characters.
///
/// - Validation: single-line fields (names, topics, queries) refuse every control and bidi
///   control (``lineProblem(_:)``); notes keep newlines and tabs but refuse every other
///   control and every bidi control (``notesProblem(_:)``). Server and clients use the same
///   functions.
/// - Terminals: ``terminal(_:multiline:)`` escapes what the screen must never receive, for
///   every string from a server or a file that an app prints (tables, `show`, messages,
///   errors, prompts).
/// - JSON: ``isUnsafeInJSON(_:)`` names the scalars the suite's JSON output writes as `\u`
///   escapes.
public enum TextSafety {
    /// C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Bidirectional formatting controls: ALM (U+061C), LRM and RLM (U+200E, U+200F), the
    /// embeddings and overrides (U+202A–U+202E) and the isolates (U+2066–U+2069).
    public static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// Invisible characters a terminal must not receive raw: bidi controls, the other Unicode
    /// format characters (zero-width space, BOM, soft hyphen, …; but not the zero-width
    /// joiner and non-joiner, which emoji and several scripts need) and the line and
    /// paragraph separators.
    public static func isFormat(_ scalar: Unicode.Scalar) -> Bool {
        if isBidiControl(scalar) { return true }
        switch scalar.value {
        case 0x200C, 0x200D: return false
        case 0x2028, 0x2029: return true
        default: return scalar.properties.generalCategory == .format
        }
    }

    /// Why `text` is not acceptable as a single-line field, or nil: it holds a control
    /// character or a bidi control.
    public static func lineProblem(_ text: String) -> String? {
        for scalar in text.unicodeScalars {
            if isControl(scalar) { return "must be a single line without control characters" }
            if isBidiControl(scalar) {
                return "must not contain bidirectional control characters"
            }
        }
        return nil
    }

    /// Why `text` is not acceptable as notes, or nil: a control character other than a
    /// newline or tab, or a bidi control.
    public static func notesProblem(_ text: String) -> String? {
        for scalar in text.unicodeScalars {
            if isControl(scalar), scalar != "\n", scalar != "\t" {
                return "must not contain control characters other than newlines and tabs"
            }
            if isBidiControl(scalar) {
                return "must not contain bidirectional control characters"
            }
        }
        return nil
    }

    /// `text` made safe to print on a terminal: controls written as `\xHH` and format
    /// characters as `\u{XXXX}`, so server or file data can neither move the cursor, set a
    /// title or the clipboard (OSC), nor reorder what is shown. With `multiline`, newlines
    /// and tabs are kept (notes); otherwise they are escaped too.
    public static func terminal(_ text: String, multiline: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || isFormat($0) }) else {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if multiline, scalar == "\n" || scalar == "\t" {
                out.append(scalar)
            } else if isControl(scalar) {
                out.append(contentsOf: "\\x\(hex(scalar.value, digits: 2))".unicodeScalars)
            } else if isFormat(scalar) {
                out.append(contentsOf: "\\u{\(hex(scalar.value, digits: 4))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Whether the suite's JSON output writes `scalar` as a `\u` escape: DEL, C1 controls,
    /// bidi controls, and the line and paragraph separators (C0 controls JSON escapes anyway).
    public static func isUnsafeInJSON(_ scalar: Unicode.Scalar) -> Bool {
        isControl(scalar) || isBidiControl(scalar) || scalar.value == 0x2028
            || scalar.value == 0x2029
    }

    /// `\uXXXX` for a scalar of the Basic Multilingual Plane, a surrogate pair above it.
    public static func jsonEscape(_ scalar: Unicode.Scalar) -> String {
        guard scalar.value > 0xFFFF else { return "\\u" + hex(scalar.value, digits: 4) }
        let value = scalar.value - 0x10000
        return "\\u" + hex(0xD800 + (value >> 10), digits: 4) + "\\u"
            + hex(0xDC00 + (value & 0x3FF), digits: 4)
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
