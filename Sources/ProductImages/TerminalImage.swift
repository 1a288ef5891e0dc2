public import PNG

/// Draws an image as text: each character cell shows two pixels stacked (the upper half
/// block `▀` in the top pixel's colour over the bottom pixel's as background), in 24-bit
/// colour, or in the 16 standard colours (dithered) on a terminal without 24-bit colour; or,
/// without colour (`NO_COLOR`), one shade character per cell (` ░▒▓█`, denser for brighter
/// pixels, as on a dark terminal).
///
/// Shades keep an image's shapes even where its colours are equally bright (a pink logo on
/// teal): each pixel is placed on the line through colour space along which the image's
/// colours differ most (its first principal component, oriented so brighter stays denser),
/// that scale is stretched to the full range of shades, and the cells are dithered
/// (Floyd–Steinberg) into the five shades.
///
/// The image is scaled down by area averaging (alpha-weighted) to at most ``columns`` cells
/// wide, keeping its aspect ratio (a cell is about twice as tall as wide, so one cell holds
/// one pixel column and two pixel rows). Mostly transparent pixels are left to the
/// terminal's background. Every line ends by resetting the colours.
public struct TerminalImage: Sendable {
    /// How colour is used.
    public enum Style: Sendable, Hashable {
        /// 24-bit colour escape sequences with half blocks.
        case trueColor
        /// The 16 standard colours (SGR 30–37, 90–97), dithered, with half blocks.
        case sixteenColors
        /// No escape sequences: shade characters by brightness.
        case monochrome
    }

    /// The widest drawing, in cells.
    public var columns: Int
    /// Colour or not.
    public var style: Style

    /// A renderer for drawings at most `columns` cells wide.
    public init(columns: Int, style: Style) {
        self.columns = max(1, columns)
        self.style = style
    }

    /// The drawing of `image`: lines ending in `\n`; empty for an empty image.
    public func render(_ image: PNGImage) -> String {
        guard image.width > 0, image.height > 0 else { return "" }
        let width = min(columns, image.width)
        // Pixel rows after scaling, rounded up to whole cells (two rows each).
        var height = max(
            1,
            Int((Double(image.height) * Double(width) / Double(image.width)).rounded())
        )
        if height % 2 == 1 { height += 1 }
        let pixels = Self.scaled(image, width: width, height: height)
        switch style {
        case .monochrome: return Self.monochrome(pixels, width: width, height: height)
        case .sixteenColors: return Self.sixteenColors(pixels, width: width, height: height)
        case .trueColor: break
        }
        var out = ""
        out.reserveCapacity(width * height * 12)
        for row in stride(from: 0, to: height, by: 2) {
            trueColorLine(pixels, width: width, top: row, into: &out)
        }
        return out
    }

    /// An averaged pixel: colour (0…255) and coverage (0…1).
    struct Sample: Equatable {
        var red: Double
        var green: Double
        var blue: Double
        var alpha: Double

        static let clear = Sample(red: 0, green: 0, blue: 0, alpha: 0)

        var isVisible: Bool { alpha >= 0.5 }
        var rgb: (Int, Int, Int) {
            (Int(red.rounded()), Int(green.rounded()), Int(blue.rounded()))
        }
        /// Relative luminance (Rec. 709 weights on the stored values), 0…1.
        var luminance: Double { (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255 }
    }

    /// `image` resampled to `width` × `height` by averaging the source pixels each target
    /// pixel covers, weighted by alpha (so transparent pixels add no colour).
    static func scaled(_ image: PNGImage, width: Int, height: Int) -> [Sample] {
        var samples = [Sample](repeating: .clear, count: width * height)
        for y in 0..<height {
            let y0 = y * image.height / height
            let y1 = max(y0 + 1, (y + 1) * image.height / height)
            for x in 0..<width {
                let x0 = x * image.width / width
                let x1 = max(x0 + 1, (x + 1) * image.width / width)
                var red = 0.0
                var green = 0.0
                var blue = 0.0
                var alpha = 0.0
                for sy in y0..<min(y1, image.height) {
                    var index = (sy * image.width + x0) * 4
                    for _ in x0..<min(x1, image.width) {
                        let a = Double(image.rgba[index + 3])
                        red += Double(image.rgba[index]) * a
                        green += Double(image.rgba[index + 1]) * a
                        blue += Double(image.rgba[index + 2]) * a
                        alpha += a
                        index += 4
                    }
                }
                let count = Double((y1 - y0) * (x1 - x0))
                guard alpha > 0 else { continue }
                samples[y * width + x] = Sample(
                    red: red / alpha,
                    green: green / alpha,
                    blue: blue / alpha,
                    alpha: alpha / (255 * count)
                )
            }
        }
        return samples
    }

    private func trueColorLine(_ pixels: [Sample], width: Int, top: Int, into out: inout String) {
        var foreground: (Int, Int, Int)?
        var background: (Int, Int, Int)?
        var plainBackground = true
        func setForeground(_ color: (Int, Int, Int)) {
            if let foreground, foreground == color { return }
            out += "\u{1B}[38;2;\(color.0);\(color.1);\(color.2)m"
            foreground = color
        }
        func setBackground(_ color: (Int, Int, Int)?) {
            if let color {
                if !plainBackground, let background, background == color { return }
                out += "\u{1B}[48;2;\(color.0);\(color.1);\(color.2)m"
                background = color
                plainBackground = false
            } else if !plainBackground {
                out += "\u{1B}[49m"
                background = nil
                plainBackground = true
            }
        }
        for x in 0..<width {
            let upper = pixels[top * width + x]
            let lower = pixels[(top + 1) * width + x]
            switch (upper.isVisible, lower.isVisible) {
            case (false, false):
                setBackground(nil)
                out += " "
            case (true, false):
                setBackground(nil)
                setForeground(upper.rgb)
                out += "▀"
            case (false, true):
                setBackground(nil)
                setForeground(lower.rgb)
                out += "▄"
            case (true, true):
                setForeground(upper.rgb)
                setBackground(lower.rgb)
                out += "▀"
            }
        }
        out += "\u{1B}[0m\n"
    }

    private static let shades: [Character] = [" ", "░", "▒", "▓", "█"]

    /// One shade per cell: the cells' tones (``tones(_:width:height:)``), dithered into the
    /// five shades; transparent cells stay blank.
    static func monochrome(_ pixels: [Sample], width: Int, height: Int) -> String {
        let rows = height / 2
        var tone = [Double](repeating: 0, count: width * rows)
        var visible = [Bool](repeating: false, count: width * rows)
        let pixelTones = tones(pixels)
        for row in 0..<rows {
            for x in 0..<width {
                let upper = (2 * row) * width + x
                let lower = upper + width
                // Transparent halves count as background (dark).
                let parts = [upper, lower].filter { pixels[$0].isVisible }
                visible[row * width + x] = !parts.isEmpty
                tone[row * width + x] = parts.map { pixelTones[$0] }.reduce(0, +) / 2
            }
        }
        let levels = Double(shades.count - 1)
        var out = ""
        for row in 0..<rows {
            var line = ""
            for x in 0..<width {
                let index = row * width + x
                guard visible[index] else {
                    line.append(" ")
                    continue
                }
                let wanted = min(1, max(0, tone[index]))
                let level = Int((wanted * levels).rounded())
                line.append(shades[level])
                // Floyd–Steinberg: the rounding error goes to the neighbours still to come.
                let error = wanted - Double(level) / levels
                func spread(_ dx: Int, _ dy: Int, _ share: Double) {
                    let nx = x + dx
                    let ny = row + dy
                    guard nx >= 0, nx < width, ny < rows, visible[ny * width + nx] else { return }
                    tone[ny * width + nx] += error * share
                }
                spread(1, 0, 7 / 16)
                spread(-1, 1, 3 / 16)
                spread(0, 1, 5 / 16)
                spread(1, 1, 1 / 16)
            }
            while line.last == " " { line.removeLast() }
            out += line + "\n"
        }
        return out
    }

    /// Each visible pixel's tone, 0…1: its colour projected on the direction in which the
    /// image's colours vary most (brighter colours towards 1), stretched so the 2nd and 98th
    /// percentiles span the whole range. A one-colour image keeps its luminance.
    static func tones(_ pixels: [Sample]) -> [Double] {
        let visible = pixels.filter(\.isVisible)
        guard visible.count > 1 else { return pixels.map(\.luminance) }
        let count = Double(visible.count)
        let mean = [
            visible.map(\.red).reduce(0, +) / count,
            visible.map(\.green).reduce(0, +) / count,
            visible.map(\.blue).reduce(0, +) / count,
        ]
        var covariance = [[Double]](repeating: [0, 0, 0], count: 3)
        for pixel in visible {
            let d = [pixel.red - mean[0], pixel.green - mean[1], pixel.blue - mean[2]]
            for i in 0..<3 { for j in 0..<3 { covariance[i][j] += d[i] * d[j] / count } }
        }
        // The first principal component by power iteration, started at the luminance axis.
        var axis = [0.2126, 0.7152, 0.0722]
        for _ in 0..<32 {
            var next = [0.0, 0, 0]
            for i in 0..<3 { for j in 0..<3 { next[i] += covariance[i][j] * axis[j] } }
            let norm = (next[0] * next[0] + next[1] * next[1] + next[2] * next[2]).squareRoot()
            guard norm > 1e-9 else { return pixels.map(\.luminance) }
            axis = next.map { $0 / norm }
        }
        // Brighter colours denser: the axis points the way luminance grows.
        if 0.2126 * axis[0] + 0.7152 * axis[1] + 0.0722 * axis[2] < 0 {
            axis = axis.map { -$0 }
        }
        func project(_ pixel: Sample) -> Double {
            pixel.red * axis[0] + pixel.green * axis[1] + pixel.blue * axis[2]
        }
        let sorted = visible.map(project).sorted()
        let low = sorted[Int(Double(sorted.count - 1) * 0.02)]
        let high = sorted[Int(Double(sorted.count - 1) * 0.98)]
        guard high - low > 1 else { return pixels.map(\.luminance) }
        return pixels.map { min(1, max(0, (project($0) - low) / (high - low))) }
    }

    /// The 16 standard colours (xterm's values) and their SGR foreground codes.
    static let palette: [(rgb: (Double, Double, Double), code: Int)] = [
        ((0, 0, 0), 30), ((205, 0, 0), 31), ((0, 205, 0), 32), ((205, 205, 0), 33),
        ((0, 0, 238), 34), ((205, 0, 205), 35), ((0, 205, 205), 36), ((229, 229, 229), 37),
        ((127, 127, 127), 90), ((255, 0, 0), 91), ((0, 255, 0), 92), ((255, 255, 0), 93),
        ((92, 92, 255), 94), ((255, 0, 255), 95), ((0, 255, 255), 96), ((255, 255, 255), 97),
    ]

    /// Half blocks in the 16 standard colours, each pixel dithered (Floyd–Steinberg in RGB)
    /// to its nearest colour.
    static func sixteenColors(_ pixels: [Sample], width: Int, height: Int) -> String {
        var rgb = pixels.map { [$0.red, $0.green, $0.blue] }
        var chosen = [Int](repeating: 0, count: pixels.count)
        for y in 0..<height {
            for x in 0..<width {
                let index = y * width + x
                guard pixels[index].isVisible else { continue }
                let wanted = rgb[index].map { min(255, max(0, $0)) }
                var best = 0
                var bestDistance = Double.infinity
                for (position, entry) in palette.enumerated() {
                    let d0 = wanted[0] - entry.rgb.0
                    let d1 = wanted[1] - entry.rgb.1
                    let d2 = wanted[2] - entry.rgb.2
                    let distance = 0.3 * d0 * d0 + 0.59 * d1 * d1 + 0.11 * d2 * d2
                    if distance < bestDistance {
                        bestDistance = distance
                        best = position
                    }
                }
                chosen[index] = best
                let entry = palette[best].rgb
                let error = [wanted[0] - entry.0, wanted[1] - entry.1, wanted[2] - entry.2]
                func spread(_ dx: Int, _ dy: Int, _ share: Double) {
                    let nx = x + dx
                    let ny = y + dy
                    guard nx >= 0, nx < width, ny < height, pixels[ny * width + nx].isVisible
                    else { return }
                    for c in 0..<3 { rgb[ny * width + nx][c] += error[c] * share }
                }
                spread(1, 0, 7 / 16)
                spread(-1, 1, 3 / 16)
                spread(0, 1, 5 / 16)
                spread(1, 1, 1 / 16)
            }
        }
        var out = ""
        for top in stride(from: 0, to: height, by: 2) {
            for x in 0..<width {
                let upper = top * width + x
                let lower = upper + width
                switch (pixels[upper].isVisible, pixels[lower].isVisible) {
                case (false, false): out += "\u{1B}[0m "
                case (true, false): out += "\u{1B}[0;\(palette[chosen[upper]].code)m▀"
                case (false, true): out += "\u{1B}[0;\(palette[chosen[lower]].code)m▄"
                case (true, true):
                    // Background codes are the foreground's + 10 (40–47, 100–107).
                    out +=
                        "\u{1B}[0;\(palette[chosen[upper]].code);\(palette[chosen[lower]].code + 10)m▀"
                }
            }
            out += "\u{1B}[0m\n"
        }
        return out
    }
}
