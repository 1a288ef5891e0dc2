internal import CZBar

extension ZBarEngine {
    /// Whether zbar's reading `symbol`, a UPC-E or an EAN-8, has bars where its quiet zones
    /// should be: then it is part of a longer symbol, not a symbol of its own.
    ///
    /// zbar checks no quiet zone beside UPC-E and EAN-8. Every parity pattern of an EAN-13's
    /// left half with a first digit other than 0 is a UPC-E number system 1 pattern, and a
    /// UPC-E's end guard (space, bar, space, bar, space, bar) is what a blurred centre guard
    /// and the next digit can look like, so zbar can read a UPC-E out of the left half of an
    /// EAN-13 or UPC-A whose own reading failed (a blurred photo). A symbol of its own has at
    /// least 7 modules of light beside its guards (ISO/IEC 15420); a label's edge or printed
    /// digits there make one step or one mark, never whole bars on most of the lines read.
    ///
    /// - Parameters:
    ///   - pixel: the grey level at a point of the image zbar read, nil outside what can be
    ///     seen. It looks in the whole image where zbar read a region of it: a region's crop
    ///     ends where the region finder saw the bars end, and its quiet zones are painted.
    /// - Returns: true when a bar begins 1.5 to 5 modules beyond either end, and ends within
    ///   9.5 of it, on most of up to five of the lines zbar read it on.
    static func hasBarsInQuietZone(
        _ symbol: OpaquePointer,
        pixel: (_ x: Int, _ y: Int) -> Int?
    ) -> Bool {
        let modules: Double
        switch zbar_symbol_get_type(symbol) {
        case ZBAR_UPCE: modules = 51
        case ZBAR_EAN8: modules = 67
        default: return false
        }
        let alongRows: Bool
        switch zbar_symbol_get_orientation(symbol) {
        case ZBAR_ORIENT_UP, ZBAR_ORIENT_DOWN: alongRows = true
        case ZBAR_ORIENT_LEFT, ZBAR_ORIENT_RIGHT: alongRows = false
        default: return false
        }
        // The ends along the bars' axis and the lines across, from zbar's points (one at the
        // symbol's far end for each line it was decoded on, in either direction).
        var along: [Int] = []
        var across: [Int] = []
        for i in 0..<zbar_symbol_get_loc_size(symbol) {
            let (x, y) = (
                Int(zbar_symbol_get_loc_x(symbol, i)), Int(zbar_symbol_get_loc_y(symbol, i))
            )
            along.append(alongRows ? x : y)
            across.append(alongRows ? y : x)
        }
        guard let start = along.min(), let end = along.max(), end > start else { return false }
        let module = Double(end - start) / modules
        guard module >= 0.8 else { return false }
        let lines = Set(across).sorted()
        let picked = (0..<min(5, lines.count)).map { lines[$0 * lines.count / min(5, lines.count)] }
        func level(_ position: Int, _ line: Int) -> Int? {
            alongRows ? pixel(position, line) : pixel(line, position)
        }
        var crowded = 0
        for line in picked {
            // The symbol's own dark and light on this line.
            var levels = (start...end).compactMap { level($0, line) }
            guard levels.count > 8 else { continue }
            levels.sort()
            let dark = levels[levels.count / 10]
            let light = levels[levels.count * 9 / 10]
            let contrast = Double(light - dark)
            guard contrast >= 24 else { continue }
            // Walking out from the bars' end: a fall of 0.4 of the symbol's contrast from the
            // lightest level so far, 1.5 to 5 modules out, then a rise of 0.25 within 9.5
            // modules of that end (an EAN bar is at most 4 modules wide, and blur keeps a
            // narrow space from the full light). A label's edge or a dark ground falls and
            // stays down.
            func bar(from point: Int, outward step: Int) -> Bool {
                // zbar's point can lie up to two modules inside its guard: the bars end at
                // the last dark pixel within 3 modules of it.
                var edge = point
                for offset in 1...Int((3 * module).rounded(.up)) {
                    guard let value = level(point + step * offset, line) else { break }
                    if value < (dark + light) / 2 { edge = point + step * offset }
                }
                var peak = -1.0
                var trough: Double?
                for offset in 1...Int((9.5 * module).rounded(.up)) {
                    guard let value = level(edge + step * offset, line).map(Double.init) else {
                        return false
                    }
                    if let low = trough {
                        if value >= low + 0.25 * contrast { return true }
                        trough = min(low, value)
                    } else {
                        peak = max(peak, value)
                        let distance = Double(offset)
                        if distance >= 1.5 * module, distance <= 5 * module,
                            value <= peak - 0.4 * contrast
                        {
                            trough = value
                        }
                    }
                }
                return false
            }
            if bar(from: end, outward: 1) || bar(from: start, outward: -1) { crowded += 1 }
        }
        return crowded * 2 > picked.count
    }
}
