import Foundation
import ScannerImages

/// Check digits for the built-in validators (Scanner does not depend on Models).
public enum CheckDigits {
    /// GS1 mod-10: GTIN-8, -12, -13 and -14 (digits only).
    public static func isValidGTIN(_ digits: String) -> Bool {
        let values = digits.compactMap(\.wholeNumberValue)
        guard values.count == digits.count, [8, 12, 13, 14].contains(values.count) else {
            return false
        }
        var sum = 0
        // From the right, excluding the check digit: weights 3, 1, 3, ...
        for (i, v) in values.dropLast().reversed().enumerated() { sum += v * (i % 2 == 0 ? 3 : 1) }
        return (10 - sum % 10) % 10 == values.last
    }

    /// Luhn check of a 15-digit IMEI (digits only).
    public static func isValidIMEI(_ digits: String) -> Bool {
        let values = digits.compactMap(\.wholeNumberValue)
        guard values.count == 15, digits.count == 15 else { return false }
        var sum = 0
        for (i, v) in values.reversed().enumerated() {
            if i % 2 == 1 {
                let d = v * 2
                sum += d > 9 ? d - 9 : d
            } else {
                sum += v
            }
        }
        return sum % 10 == 0
    }
}

/// Finds validated candidates in recognised lines.
struct TextMatcher {
    let validators: [TextValidator]
    let regexes: [Int: NSRegularExpression]

    init(validators: [TextValidator]) throws(OCRError) {
        self.validators = validators
        var regexes: [Int: NSRegularExpression] = [:]
        for (i, v) in validators.enumerated() {
            guard case .regex(let pattern) = v else { continue }
            do {
                guard !pattern.isEmpty else { throw CocoaError(.formatting) }
                regexes[i] = try NSRegularExpression(pattern: pattern)
            } catch {
                throw OCRError(
                    code: .invalidOptions,
                    input: "options",
                    message: "invalid regular expression '\(pattern)'"
                )
            }
        }
        self.regexes = regexes
    }

    /// No validators: everything counts as text.
    var isEmpty: Bool { validators.isEmpty }

    func matches(in lines: [RecognizedLine]) -> [TextMatch] {
        var out: [TextMatch] = []
        var seen = Set<String>()
        for line in lines {
            // The line's text with each word's UTF-16 range, to box a match by its words.
            var ranges: [(NSRange, PixelRect)] = []
            var text = ""
            for word in line.words {
                if !text.isEmpty { text += " " }
                let start = (text as NSString).length
                text += word.text
                ranges.append(
                    (NSRange(location: start, length: (word.text as NSString).length), word.box)
                )
            }
            func box(_ r: NSRange) -> PixelRect {
                let hit = ranges.filter { NSIntersectionRange($0.0, r).length > 0 }.map(\.1)
                return hit.isEmpty ? line.box : PixelRect.union(hit)
            }
            for (i, validator) in validators.enumerated() {
                var found: [(String, NSRange)] = []
                switch validator {
                case .gtin:
                    found = digitRuns(text).filter { CheckDigits.isValidGTIN($0.0) }
                case .imei:
                    found = digitRuns(text).filter { CheckDigits.isValidIMEI($0.0) }
                case .regex:
                    guard let re = regexes[i] else { continue }
                    let ns = text as NSString
                    found = re.matches(in: text, range: NSRange(location: 0, length: ns.length))
                        .filter { $0.range.length > 0 }
                        .map { (ns.substring(with: $0.range), $0.range) }
                }
                for (candidate, range) in found
                where seen.insert(validator.name + "\u{0}" + candidate).inserted {
                    out.append(
                        TextMatch(validator: validator.name, text: candidate, box: box(range))
                    )
                }
            }
        }
        return out
    }

    /// Runs of digits, where single spaces or dashes between digit groups are separators
    /// (printed GTINs and IMEIs are often grouped), plus each group alone.
    func digitRuns(_ text: String) -> [(String, NSRange)] {
        let chars = Array(text.utf16)
        var runs: [(String, NSRange)] = []
        var i = 0
        func isDigit(_ c: UInt16) -> Bool { c >= 48 && c <= 57 }
        while i < chars.count {
            guard isDigit(chars[i]) else {
                i += 1
                continue
            }
            let start = i
            var digits = ""
            var groups: [(String, NSRange)] = []
            var groupStart = i
            var group = ""
            while i < chars.count {
                if isDigit(chars[i]) {
                    digits.unicodeScalars.append(UnicodeScalar(chars[i])!)
                    group.unicodeScalars.append(UnicodeScalar(chars[i])!)
                    i += 1
                } else if (chars[i] == 32 || chars[i] == 45), i + 1 < chars.count,
                    isDigit(chars[i + 1])
                {
                    groups.append((group, NSRange(location: groupStart, length: i - groupStart)))
                    group = ""
                    i += 1
                    groupStart = i
                } else {
                    break
                }
            }
            groups.append((group, NSRange(location: groupStart, length: i - groupStart)))
            runs.append((digits, NSRange(location: start, length: i - start)))
            if groups.count > 1 { runs += groups }
        }
        return runs
    }
}

extension PixelRect {
    /// The smallest rectangle holding all of `rects` (not empty).
    static func union(_ rects: [PixelRect]) -> PixelRect {
        let x0 = rects.map(\.x).min() ?? 0
        let y0 = rects.map(\.y).min() ?? 0
        let x1 = rects.map { $0.x + $0.width }.max() ?? 0
        let y1 = rects.map { $0.y + $0.height }.max() ?? 0
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}
