public import PNG

/// Draws an image as text: each character cell shows two pixels stacked (the upper half
/// block `▀` in the top pixel's colour over the bottom pixel's as background), in 24-bit
/// colour; or, without colour (`NO_COLOR`), one shade character per cell (` ░▒▓█`, denser
/// for brighter pixels, as on a dark terminal).
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
        var out = ""
        out.reserveCapacity(width * height * 12)
        for row in stride(from: 0, to: height, by: 2) {
            switch style {
            case .trueColor: trueColorLine(pixels, width: width, top: row, into: &out)
            case .monochrome: monochromeLine(pixels, width: width, top: row, into: &out)
            }
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

    private func monochromeLine(_ pixels: [Sample], width: Int, top: Int, into out: inout String) {
        var line = ""
        for x in 0..<width {
            let cell = [pixels[top * width + x], pixels[(top + 1) * width + x]]
            let visible = cell.filter(\.isVisible)
            guard !visible.isEmpty else {
                line.append(" ")
                continue
            }
            // Transparent halves count as background (dark).
            let brightness = visible.map(\.luminance).reduce(0, +) / 2
            let index = min(Self.shades.count - 1, Int(brightness * Double(Self.shades.count)))
            line.append(Self.shades[index])
        }
        while line.last == " " { line.removeLast() }
        out += line + "\n"
    }
}
