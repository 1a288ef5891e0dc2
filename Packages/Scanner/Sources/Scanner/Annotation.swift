internal import CLeptonica
import Foundation
public import ScannerBarcodes
public import ScannerImages
public import ScannerText
internal import Synchronization

/// A picture of what was read in one image, for a person to check: each barcode symbol's
/// outline with its decoded text, and each line of recognised text in a box with its text
/// and confidence, drawn over a colour copy of the image.
///
/// Symbols are drawn in green; text lines in blue, or in orange when their confidence is
/// below ``lowConfidence`` (what a person should look at first). Images smaller than
/// ``minimumLongSide`` pixels on their longer side are enlarged by a whole factor (at most
/// 4, pixels replicated) so the labels stay readable; ``Rendered/scale`` says by how much.
/// Labels show printable ASCII; other characters are drawn as `?`.
public enum Annotation {
    /// Lines read with less confidence than this are drawn in orange.
    public static let lowConfidence = 0.6
    /// Smaller images are enlarged by a whole factor up to this long side.
    public static let minimumLongSide = 1000

    /// Outline colour of symbols (RGB).
    public static let symbolColour: (UInt8, UInt8, UInt8) = (0, 170, 0)
    /// Box colour of confidently read text lines (RGB).
    public static let textColour: (UInt8, UInt8, UInt8) = (0, 80, 230)
    /// Box colour of text lines read with low confidence (RGB).
    public static let doubtfulTextColour: (UInt8, UInt8, UInt8) = (240, 120, 0)

    /// An annotated picture.
    public struct Rendered: Sendable {
        /// The picture, RGB.
        public var image: ImageBuffer
        /// How much the input was enlarged (1 when it was large enough).
        public var scale: Int
    }

    /// Draws `symbols` and the lines of `text` over an RGB copy of `image`.
    ///
    /// Coordinates are those of `image`, as ``BarcodeReader`` and ``TextReader`` report them.
    /// Returns nil only when memory for the picture cannot be had.
    public static func render(
        _ image: ImageBuffer,
        symbols: [Barcode],
        text: TextResult?
    ) -> Rendered? {
        Leptonica.configure()
        let longSide = max(image.width, image.height)
        let scale = max(1, min(4, minimumLongSide / max(1, longSide)))
        guard let base = LeptPix(rgb: image) else { return nil }
        let pix: LeptPix
        if scale > 1 {
            guard let enlarged = LeptPix(pixExpandReplicate(base.pointer, Int32(scale))) else {
                return nil
            }
            pix = enlarged
        } else {
            pix = base
        }
        let width = pix.width
        let height = pix.height
        let stroke = max(2, min(width, height) / 300)
        let font = Fonts.shared.font(forLongSide: max(width, height))
        var labels: [Label] = []

        for line in text?.lines ?? [] {
            let box = line.box.scaled(by: scale)
            let colour = line.confidence < lowConfidence ? doubtfulTextColour : textColour
            if let b = boxCreate(
                Int32(box.x),
                Int32(box.y),
                Int32(max(1, box.width)),
                Int32(max(1, box.height))
            ) {
                pixRenderBoxArb(pix.pointer, b, Int32(stroke), colour.0, colour.1, colour.2)
                var p: UnsafeMutablePointer<BOX>? = b
                boxDestroy(&p)
            }
            let percent = Int((line.confidence * 100).rounded())
            labels.append(Label(text: "\(line.text) (\(percent)%)", anchor: box, colour: colour))
        }
        for symbol in symbols {
            let outline = symbol.points.map { ImagePoint(x: $0.x * scale, y: $0.y * scale) }
            let bounds = symbol.boundingBox.scaled(by: scale)
            if outline.count >= 3, bounds.width >= 2 * stroke, bounds.height >= 2 * stroke,
                let pta = ptaCreate(Int32(outline.count))
            {
                for point in outline { ptaAddPt(pta, Float(point.x), Float(point.y)) }
                pixRenderPolylineArb(
                    pix.pointer,
                    pta,
                    Int32(stroke),
                    symbolColour.0,
                    symbolColour.1,
                    symbolColour.2,
                    1
                )
                var p: UnsafeMutablePointer<PTA>? = pta
                ptaDestroy(&p)
            } else {
                // A scan line (a linear symbol found on one row) or a point: its box, widened
                // so it shows.
                let pad = 3 * stroke
                if let b = boxCreate(
                    Int32(bounds.x - pad),
                    Int32(bounds.y - pad),
                    Int32(bounds.width + 2 * pad),
                    Int32(bounds.height + 2 * pad)
                ) {
                    pixRenderBoxArb(
                        pix.pointer,
                        b,
                        Int32(stroke),
                        symbolColour.0,
                        symbolColour.1,
                        symbolColour.2
                    )
                    var p: UnsafeMutablePointer<BOX>? = b
                    boxDestroy(&p)
                }
            }
            labels.append(
                Label(
                    text: "\(symbol.symbology.zbarLabel):\(symbol.text)",
                    anchor: bounds,
                    colour: symbolColour
                )
            )
        }
        if let font {
            let boxes = labels.map(\.anchor)
            var placed: [PixelRect] = []
            for label in labels {
                let band = draw(
                    label,
                    on: pix,
                    font: font,
                    stroke: stroke,
                    avoiding: boxes + placed
                )
                if let band { placed.append(band) }
            }
        }
        return Rendered(image: pix.rgbImage(), scale: scale)
    }

    /// A label to draw beside a box.
    private struct Label {
        var text: String
        var anchor: PixelRect
        var colour: (UInt8, UInt8, UInt8)
    }

    /// Printable ASCII (what the bitmap font has), at most 80 characters.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if out.count >= 80 {
                out += "..."
                break
            }
            out.unicodeScalars.append(
                (32...126).contains(scalar.value) ? scalar : "?"
            )
        }
        return out
    }

    /// The label above its box, or below it when there is no room above or the band would
    /// cover another box or label, on a light band; returns the band.
    @discardableResult
    private static func draw(
        _ label: Label,
        on pix: LeptPix,
        font: Font,
        stroke: Int,
        avoiding boxes: [PixelRect]
    ) -> PixelRect? {
        let text = printable(label.text)
        var textWidth: Int32 = 0
        guard bmfGetStringWidth(font.pointer, text, &textWidth) == 0, textWidth > 0 else {
            return nil
        }
        let lineHeight = Int(font.pointer.pointee.lineheight)
        let x = max(0, min(label.anchor.x, pix.width - Int(textWidth) - 2))
        let above = label.anchor.y - stroke - lineHeight - 1
        let below = label.anchor.y + label.anchor.height + stroke + 1
        let fits = { (top: Int) -> Bool in top >= 0 && top + lineHeight <= pix.height }
        let clear = { (top: Int) -> Bool in
            let band = PixelRect(x: x, y: top, width: Int(textWidth) + 4, height: lineHeight)
            return !boxes.contains { $0 != label.anchor && $0.intersects(band) }
        }
        // Above, below, then further above or below when another label is in the way.
        let step = lineHeight + 1
        let tops = [above, below, above - step, below + step, above - 2 * step]
        let top =
            tops.first { fits($0) && clear($0) } ?? tops.first(where: fits)
            ?? max(0, label.anchor.y + stroke)
        if let band = boxCreate(Int32(x), Int32(top), textWidth + 4, Int32(lineHeight)) {
            pixBlendInRect(pix.pointer, band, 0xFFFF_FF00, 0.75)
            var p: UnsafeMutablePointer<BOX>? = band
            boxDestroy(&p)
        }
        let (r, g, b) = label.colour
        let colour = UInt32(r) << 24 | UInt32(g) << 16 | UInt32(b) << 8
        var drawn: Int32 = 0
        var overflow: Int32 = 0
        // y0 is the baseline: the font's line height less its descent.
        let baseline = top + Int(font.pointer.pointee.baseline1)
        pixSetTextline(
            pix.pointer,
            font.pointer,
            text,
            colour,
            Int32(x + 2),
            Int32(baseline),
            &drawn,
            &overflow
        )
        return PixelRect(x: x, y: top, width: Int(textWidth) + 4, height: lineHeight)
    }

    /// One leptonica bitmap font. Read-only once made.
    final class Font: @unchecked Sendable {
        // Sendable: leptonica only reads an L_BMF after bmfCreate (pixSetTextline and
        // bmfGetStringWidth read its tables), and it lives as long as the process's cache.
        let pointer: UnsafeMutablePointer<L_BMF>

        init?(size: Int) {
            guard let made = bmfCreate(nil, Int32(size)) else { return nil }
            pointer = made
        }
    }

    /// Bitmap fonts, made on first use per size and kept.
    final class Fonts: Sendable {
        static let shared = Fonts()
        private let made = Mutex<[Int: Font]>([:])

        /// Leptonica's sizes (4-20, even) by their line height (17-84 px): about a fortieth
        /// of the picture's long side.
        func font(forLongSide side: Int) -> Font? {
            let size = min(20, max(4, (side / 40 * 10 / 42) & ~1))
            return made.withLock { fonts in
                if let font = fonts[size] { return font }
                let font = Font(size: size)
                fonts[size] = font
                return font
            }
        }
    }
}

extension PixelRect {
    fileprivate func scaled(by factor: Int) -> PixelRect {
        PixelRect(x: x * factor, y: y * factor, width: width * factor, height: height * factor)
    }

    fileprivate func intersects(_ other: PixelRect) -> Bool {
        x < other.x + other.width && other.x < x + width && y < other.y + other.height
            && other.y < y + height
    }
}
