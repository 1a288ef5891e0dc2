import Foundation

/// The symbols ``BlurredUPCEAN`` fits: where their digits and guards lie, the blurred
/// patterns, and the search for the best codes that pass each symbology's check digit.
extension BlurredUPCEAN {
    /// One symbology's modules.
    struct Layout: Sendable {
        /// EAN-13 (and UPC-A, an EAN-13 whose first digit is 0), EAN-8 or UPC-E.
        var symbology: Symbology
        /// Modules from the first bar to the last.
        var modules: Int
        /// Each digit position's first module.
        var digitStarts: [Float]
        /// Positions from this one on use the R set; before it, the L set (and the G set too
        /// when ``usesG``).
        var rightFrom: Int
        var usesG: Bool
        /// The guard windows (``guardWindows``) the layout has.
        var guards: [Int]
        /// The second-best valid code's residual over the best one's, at least, for a symbol
        /// seen square on (``Place/tilt`` 0; a tilt t asks 1 + 2|t| times as much: it is one
        /// more way to fit a wrong code). Fewer digits leave fewer samples to tell codes
        /// apart, and UPC-E's parity patterns leave two choices (number system and check
        /// digit) to fit freely. Measured: 300 random runs of bars, blurred, and the degraded
        /// set's unread bars (none of them EAN-8 or UPC-E) fitted EAN-13 at margins up to
        /// 1.21, EAN-8 up to 1.15, UPC-E up to 1.87. 360 EAN-13s photographed at an angle
        /// (modules up to 25% wider at one end) and blurred by 0.5-1.4 modules were fitted
        /// wrong at up to 1.15 square on and 1.59 at a tilt of 0.16, right at 1.3-22; an
        /// out-of-focus photo of the dev corpus (ean13-1/36) right at 1.44. Right readings of
        /// EAN-8 and UPC-E: 3.7 and more, 8.7 and more.
        var minimumMargin: Float

        /// Patterns a position may hold, in the order of ``scores``'s rows: L 0-9 then G 0-9,
        /// or R 0-9.
        func patternCount(_ position: Int) -> Int {
            position < rightFrom && usesG ? 20 : 10
        }

        /// The template pattern (``templates``) for row `j` of position `i`.
        func pattern(_ i: Int, _ j: Int) -> Int { i < rightFrom ? j : 20 + j }

        /// EAN-13: the left guard (3 modules), six digits (L or G by the first digit), the
        /// middle guard (5), six digits (R), the right guard (3).
        static let ean13 = Layout(
            symbology: .ean13,
            modules: 95,
            digitStarts: [3, 10, 17, 24, 31, 38, 50, 57, 64, 71, 78, 85],
            rightFrom: 6,
            usesG: true,
            guards: [0, 1, 2],
            minimumMargin: 1.4
        )
        /// EAN-8: the left guard, four digits (L), the middle guard, four digits (R), the
        /// right guard.
        static let ean8 = Layout(
            symbology: .ean8,
            modules: 67,
            digitStarts: [3, 10, 17, 24, 36, 43, 50, 57],
            rightFrom: 4,
            usesG: false,
            guards: [0, 3, 4],
            minimumMargin: 2
        )
        /// UPC-E: the left guard, six digits (L or G by the number system and check digit),
        /// the end guard `010101`.
        static let upcE = Layout(
            symbology: .upcE,
            modules: 51,
            digitStarts: [3, 10, 17, 24, 31, 38],
            rightFrom: 6,
            usesG: true,
            guards: [0, 5],
            minimumMargin: 3
        )

        /// The layouts whose symbologies `asked` holds.
        static func asked(_ asked: Set<Symbology>) -> [Layout] {
            var layouts: [Layout] = []
            if !asked.isDisjoint(with: [.ean13, .upcA]) { layouts.append(.ean13) }
            if asked.contains(.ean8) { layouts.append(.ean8) }
            if asked.contains(.upcE) { layouts.append(.upcE) }
            return layouts
        }
    }

    /// Guards with the modules beside them that every symbol of the layout shares, as (first
    /// module, modules): the quiet zone, `101` and the first digit's first space (every
    /// layout); EAN-13's last left digit's bar, `01010`, the first right digit's bar; its
    /// last digit's space, `101`, the quiet zone; the same two for EAN-8; UPC-E's last
    /// digit's bar, `010101`, the quiet zone.
    static let guardWindows: [(start: Int, modules: [Int])] = [
        (-2, [0, 0, 1, 0, 1, 0]),
        (44, [1, 0, 1, 0, 1, 0, 1]), (91, [0, 1, 0, 1, 0, 0]),
        (30, [1, 0, 1, 0, 1, 0, 1]), (63, [0, 1, 0, 1, 0, 0]),
        (44, [1, 0, 1, 0, 1, 0, 1, 0, 0]),
    ]

    static let samplesPerModule = 3
    static let samplesPerDigit = 21
    /// Each digit's place may move by up to 0.3 of a module (a curved label, a module width
    /// that drifts across a photographed symbol).
    static let shifts: [Float] = [-0.3, -0.15, 0, 0.15, 0.3]
    /// Blur widths (Gaussian sigma) in modules: 0.3, 0.4, ... 1.6.
    static let blurs: [Float] = (0..<14).map { 0.3 + 0.1 * Float($0) }

    /// EAN-13's first digit's parity pattern (bit i set: digit i + 1 uses the G set).
    static let parities: [Int] = [
        0, 0b110100, 0b101100, 0b011100, 0b110010, 0b100110, 0b001110, 0b101010, 0b011010,
        0b010110,
    ]
    /// UPC-E's parity pattern for number system 0 by check digit (E, even: the G set; bit i
    /// set: digit i + 1 uses it); number system 1 is its complement.
    static let upcEParities: [Int] = [
        "EEEOOO", "EEOEOO", "EEOOEO", "EEOOOE", "EOEEOO", "EOOEEO", "EOOOEE", "EOEOEO",
        "EOEOOE", "EOOEOE",
    ].map { pattern in
        pattern.enumerated().reduce(0) { bits, place in
            place.element == "E" ? bits | (1 << place.offset) : bits
        }
    }
    /// The L set's modules (1 = bar), left to right.
    static let lCodes: [[Int]] = [
        [0, 0, 0, 1, 1, 0, 1], [0, 0, 1, 1, 0, 0, 1], [0, 0, 1, 0, 0, 1, 1],
        [0, 1, 1, 1, 1, 0, 1], [0, 1, 0, 0, 0, 1, 1], [0, 1, 1, 0, 0, 0, 1],
        [0, 1, 0, 1, 1, 1, 1], [0, 1, 1, 1, 0, 1, 1], [0, 1, 1, 0, 1, 1, 1],
        [0, 0, 0, 1, 0, 1, 1],
    ]

    /// Every digit pattern blurred, sampled: for each blur and shift, 30 patterns (L 0-9,
    /// G 0-9, R 0-9) of ``samplesPerDigit`` samples in three 8-lane vectors (the last three
    /// lanes 0), with each pattern's sum and centred square sum.
    struct Templates {
        var values: [SIMD8<Float>]
        var sums: [Float]
        var spreads: [Float]

        static func index(blur: Int, shift: Int, pattern: Int) -> Int {
            (blur * BlurredUPCEAN.shifts.count + shift) * 30 + pattern
        }
    }

    static let templates: Templates = {
        let r = lCodes.map { $0.map { 1 - $0 } }
        let g = r.map { Array($0.reversed()) }
        let patterns = lCodes + g + r
        let n = samplesPerDigit
        var values: [SIMD8<Float>] = []
        var sums: [Float] = []
        var spreads: [Float] = []
        for sigma in blurs {
            for shift in shifts {
                for (index, bits) in patterns.enumerated() {
                    // The modules beside a digit are known: in the L and G sets a bar before
                    // (a guard's or the previous digit's last) and a space after; in the R
                    // set a space before and a bar after.
                    let modules = index < 20 ? [0, 1] + bits + [0, 0] : [1, 0] + bits + [1, 0]
                    var t = [Float](repeating: 0, count: 24)
                    for k in 0..<n {
                        let u = (Double(k) + 0.5) / Double(samplesPerModule) + Double(shift)
                        t[k] = Float(blurred(modules, from: -2, at: u, sigma: Double(sigma)))
                    }
                    let sum = t.reduce(0, +)
                    for lane in 0..<3 { values.append(SIMD8(t[(8 * lane)..<(8 * lane + 8)])) }
                    sums.append(sum)
                    spreads.append(t.reduce(0) { $0 + $1 * $1 } - sum * sum / Float(n))
                }
            }
        }
        return Templates(values: values, sums: sums, spreads: spreads)
    }()

    /// The guard windows blurred and sampled (``samplesPerModule`` a module), for each blur
    /// and window: the samples, their sum and centred square sum.
    static let guardTemplates: [(values: [Float], sum: Float, spread: Float)] = {
        var result: [(values: [Float], sum: Float, spread: Float)] = []
        for sigma in blurs {
            for window in guardWindows {
                let n = window.modules.count * samplesPerModule
                var t = [Float](repeating: 0, count: n)
                for k in 0..<n {
                    let u = (Double(k) + 0.5) / Double(samplesPerModule)
                    t[k] = Float(blurred(window.modules, from: 0, at: u, sigma: Double(sigma)))
                }
                let sum = t.reduce(0, +)
                result.append((t, sum, t.reduce(0) { $0 + $1 * $1 } - sum * sum / Float(n)))
            }
        }
        return result
    }()

    /// How dark modules (1 = bar) starting at module `from` look at `u` (in modules) under
    /// a Gaussian blur of `sigma` modules: 1 inside a wide bar, 0 in a wide space.
    static func blurred(_ modules: [Int], from: Int, at u: Double, sigma: Double) -> Double {
        func phi(_ z: Double) -> Double { 0.5 * (1 + erf(z / 2.0.squareRoot())) }
        var v = 0.0
        for (j, bit) in modules.enumerated() where bit == 1 {
            let start = Double(j + from)
            v += phi((u - start) / sigma) - phi((u - start - 1) / sigma)
        }
        return v
    }

    // MARK: - Codes

    /// A code and its residual: its digits packed four bits each, the first lowest (no
    /// allocation while the search extends millions of paths).
    struct Code {
        var score: Float
        var packed: UInt64 = 0
        var count = 0

        static let none = Code(score: .infinity)

        func appending(_ digit: Int, score added: Float = 0) -> Code {
            Code(
                score: score + added,
                packed: packed | UInt64(digit) << UInt64(4 * count),
                count: count + 1
            )
        }

        var digits: [Int] { (0..<count).map { Int((packed >> UInt64(4 * $0)) & 15) } }
    }

    /// The two best of a search so far, in slots `base` and `base + 1` of `slots`.
    static func insert(_ code: Code, into slots: inout [Code], at base: Int = 0) {
        if code.score < slots[base].score {
            slots[base + 1] = slots[base]
            slots[base] = code
        } else if code.score < slots[base + 1].score {
            slots[base + 1] = code
        }
    }

    /// The two codes of least residual (``scores``'s rows for `layout`) that pass its check
    /// digit: EAN-13's 13 digits, EAN-8's 8, UPC-E's 8 (number system, six digits, check
    /// digit).
    static func twoBest(_ out: [Float], _ layout: Layout) -> [Code] {
        var best = [Code](repeating: .none, count: 2)
        switch layout.symbology {
        case .ean8: twoBestEAN8(out, into: &best)
        case .upcE: twoBestUPCE(out, into: &best)
        default: twoBestEAN13(out, into: &best)
        }
        return best.filter { $0.score.isFinite }
    }

    /// Dynamic programming over positions with the weighted sum modulo 10 as the state, two
    /// paths kept per state: the two best paths from `start` (digits already chosen, their
    /// weighted sum `sum`) that end at a sum of 0, through `rows` (each position's row of
    /// ``scores``' output) with `weights`, into `best`.
    static func bestPaths(
        _ out: [Float],
        rows: [Int],
        weights: [Int],
        start: Code,
        sum: Int,
        then finish: (Code) -> Code = { $0 },
        into best: inout [Code]
    ) {
        var states = [Code](repeating: .none, count: 20)
        var next = states
        states[2 * (sum % 10)] = start
        for (row, weight) in zip(rows, weights) {
            for i in 0..<20 { next[i] = .none }
            for slot in 0..<20 where states[slot].score.isFinite {
                let path = states[slot]
                let state = slot / 2
                for digit in 0..<10 {
                    let to = (state + weight * digit) % 10
                    let score = path.score + out[row + digit]
                    guard score < next[2 * to + 1].score else { continue }
                    insert(path.appending(digit, score: out[row + digit]), into: &next, at: 2 * to)
                }
            }
            swap(&states, &next)
        }
        for slot in 0..<2 where states[slot].score.isFinite {
            insert(finish(states[slot]), into: &best)
        }
    }

    /// EAN-13: each first digit's parity pattern, then the checksum (weights 3, 1, ... on the
    /// twelve digits after the first, which weighs 1).
    static func twoBestEAN13(_ out: [Float], into best: inout [Code]) {
        let weights = (0..<12).map { $0 % 2 == 0 ? 3 : 1 }
        for first in 0..<10 {
            let rows = (0..<12).map { i in
                i * 20 + (i < 6 && parities[first] & (1 << i) != 0 ? 10 : 0)
            }
            bestPaths(
                out,
                rows: rows,
                weights: weights,
                start: Code(score: 0).appending(first),
                sum: first,
                into: &best
            )
        }
    }

    /// EAN-8: L then R digits, weights 3, 1, 3, 1, ...
    static func twoBestEAN8(_ out: [Float], into best: inout [Code]) {
        let rows = (0..<8).map { $0 * 20 }
        let weights = (0..<8).map { $0 % 2 == 0 ? 3 : 1 }
        bestPaths(out, rows: rows, weights: weights, start: Code(score: 0), sum: 0, into: &best)
    }

    /// UPC-E: each number system and check digit (which set the parity pattern), each last
    /// digit (which sets where the others go in the UPC-A the check digit is computed on),
    /// then the other five digits.
    static func twoBestUPCE(_ out: [Float], into best: inout [Code]) {
        for system in 0...1 {
            for check in 0..<10 {
                let parity = system == 0 ? upcEParities[check] : 0b111111 ^ upcEParities[check]
                let rows = (0..<6).map { i in i * 20 + (parity & (1 << i) != 0 ? 10 : 0) }
                for last in 0..<10 {
                    // The UPC-A weights (3 on its odd places, counted from 1) of digits 1-5
                    // and of the last digit as the expansion places them.
                    let (weights, lastWeight): ([Int], Int) =
                        switch last {
                        case 0...2: ([1, 3, 3, 1, 3], 1)
                        case 3: ([1, 3, 1, 1, 3], 0)
                        case 4: ([1, 3, 1, 3, 3], 0)
                        default: ([1, 3, 1, 3, 1], 3)
                        }
                    bestPaths(
                        out,
                        rows: Array(rows[0..<5]),
                        weights: weights,
                        start: Code(score: out[rows[5] + last]).appending(system),
                        sum: 3 * system + lastWeight * last + check,
                        then: { $0.appending(last).appending(check) },
                        into: &best
                    )
                }
            }
        }
    }
}
