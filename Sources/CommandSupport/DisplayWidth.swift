/// How many terminal columns text takes: wide (East Asian wide and full-width) characters and
/// emoji take two, combining marks and other zero-width characters none, the rest one.
public enum DisplayWidth {
    /// The columns `text` takes on a terminal.
    public static func of(_ text: some StringProtocol) -> Int {
        text.reduce(0) { $0 + of($1) }
    }

    /// The columns one character (grapheme cluster) takes.
    public static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.contains(where: { $0.properties.isEmojiPresentation })
            || (scalars.count > 1 && scalars.contains { $0.value == 0xFE0F })
        {
            return 2
        }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .control: return 0
        default: break
        }
        return isWide(first.value) ? 2 : 1
    }

    /// East Asian wide and full-width ranges (Unicode's EastAsianWidth W and F, in blocks).
    static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
            0x4E00...0x9FFF, 0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F,
            0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF,
            0x20000...0x2FFFD, 0x30000...0x3FFFD:
            true
        default: false
        }
    }

    /// `text` cut to at most `columns` columns, ending in `…` when cut.
    public static func truncate(_ text: String, to columns: Int) -> String {
        guard of(text) > columns else { return text }
        guard columns > 1 else { return columns == 1 ? "…" : "" }
        var out = ""
        var used = 0
        for character in text {
            let width = of(character)
            if used + width > columns - 1 { break }
            out.append(character)
            used += width
        }
        return out + "…"
    }
}
