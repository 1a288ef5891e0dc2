import Foundation
import ScannerImages

/// A second look at readings of symbols printed with modules under two pixels.
///
/// At that size a decoder's binarizer merges and splits bars, and a misread can still pass a
/// check digit (one in ten for EAN and UPC) or a weak checksum (Code 128), or a PDF417 row
/// indicator can mislead its error correction. Scaled up twice with centred bilinear
/// interpolation, the same pixels give the decoders sub-pixel edges: on the degraded set
/// every such misread reads right from the scaled region (with the local binarizer, a fixed
/// threshold, a global histogram or three times the size), and no right reading reads
/// otherwise. So each small linear or PDF417 reading is read again from its region scaled
/// up, variant by variant until one reads that place: a different reading of the same kind
/// there replaces it; the same reading, or none from every variant, leaves it as it is. 2D
/// matrix symbols (QR, DataMatrix, Aztec) carry Reed-Solomon codes strong enough not to need
/// this. On the degraded set 122 of 770 images get a second look; it turned the misreads (3 at
/// the fast effort, 5 at balanced and thorough) into none and the reads up by 3 to 4 at each
/// effort.
///
/// zbar's EAN and UPC readings, and UPC-E and EAN-8 from either edge reader, first go to
/// ``BlurredUPCEAN``'s fit of the modules (``fitted(_:in:options:)``): near the blur where
/// edges fail zbar reads wrong digits that pass the check digit on every line, and a UPC-E
/// can be an EAN-13's left half.
enum SmallSymbolCheck {
    /// Readings whose estimated module is narrower than this many pixels are read again.
    static let moduleThreshold = 2.0

    /// The estimated width of a module in pixels, or nil when `code` is not checked
    /// (a 2D matrix symbol).
    static func moduleWidth(of code: Barcode) -> Double? {
        let box = code.boundingBox
        let long = Double(max(box.width, box.height))
        let n = Double(max(1, code.bytes.count))
        let modules: Double
        switch code.symbology {
        case .ean13, .upcA: modules = 95
        case .ean8: modules = 67
        case .upcE: modules = 51
        // The longest forms for the payload's length: a short estimate of the module only
        // checks more readings.
        case .code128: modules = 11 * (n + 3) + 2
        case .code39: modules = 16 * (n + 2)
        case .code93: modules = 9 * (n + 4) + 1
        case .itf: modules = 9 * n + 10
        case .codabar: modules = 12 * (n + 2)
        case .dataBar: modules = 96
        // PDF417: 17 modules per column plus 69 for start, stop and row indicators; about
        // two characters per codeword (text compaction) and ten more for error correction,
        // laid out about three times as wide as tall, as encoders do by default.
        case .pdf417:
            let codewords = n / 2 + 10
            let columns = max(1, min(30, (codewords / 3).squareRoot().rounded(.up)))
            modules = 17 * columns + 69
        case .qrCode, .microQRCode, .dataMatrix, .aztec, .maxiCode: return nil
        }
        return long / modules
    }

    /// `found`, with each small reading checked against its region scaled up twice. `grey`'s
    /// top-left corner is at `origin` in the readings' coordinates (a region of interest).
    static func check(
        _ found: [Barcode],
        in grey: ImageBuffer,
        origin: ImagePoint,
        options: BarcodeScanOptions
    ) -> [Barcode] {
        func moved(_ code: Barcode, _ dx: Int, _ dy: Int) -> Barcode {
            var moved = code
            moved.points = code.points.map(PointTransform.translation(Double(dx), Double(dy)).apply)
            return moved
        }
        var result: [Barcode] = []
        for code in found {
            // zbar's 1D readings too: it reads blurred EAN bars wrong on many agreeing scan
            // lines where ZXing, driven hard on the same place, reads them right.
            guard let module = moduleWidth(of: code),
                module < moduleThreshold || (code.engine == .zbar && code.symbology.isLinear)
                    || isShortRetail(code)
            else {
                result.append(code)
                continue
            }
            let local = moved(code, -origin.x, -origin.y)
            let checked =
                reread(local, in: grey, options: options).map { moved($0, origin.x, origin.y) }
                ?? code
            // A corrected reading may repeat a symbol read elsewhere in the image.
            if !result.contains(where: { Merger.sameSymbol($0, checked) }) {
                result.append(checked)
            }
        }
        return result
    }

    /// The reading of `code`'s region scaled up when it differs from `code`; nil when it is
    /// the same or no variant reads anything of its kind there.
    static func reread(_ code: Barcode, in grey: ImageBuffer, options: BarcodeScanOptions)
        -> Barcode?
    {
        // zbar's EAN and UPC, and any UPC-E or EAN-8, first go to the fit of the modules,
        // which tells a blurred symbol's digits apart where edges do not (zbar itself,
        // scaled, reads the same wrong digits again): its reading, the same or another,
        // settles it.
        if (code.engine == .zbar && code.symbology.isRetail) || isShortRetail(code),
            let fitted = fitted(code, in: grey, options: options)
        {
            return fitted.text == code.text ? nil : fitted
        }
        let place = RegionSearch.widened(code)
        // `cropped` clips to the image; the crop's corner is the clipped one.
        guard let crop = grey.cropped(to: place), crop.width >= 8, crop.height >= 8 else {
            return nil
        }
        let toGrey = PointTransform.translation(Double(max(0, place.x)), Double(max(0, place.y)))
        // A symbol at an odd angle is read again turned upright, cut to its own rectangle:
        // ZXing's 1D readers follow rows, and the bounding box of a tilted symbol, scaled,
        // read none of 97 such symbols of the families set, at 36 ms each.
        let oriented = orientation(of: code)
        func image(_ factor: Double) -> (ImageBuffer, PointTransform) {
            if let oriented {
                return GreyOps.orientedRect(
                    grey,
                    centre: oriented.centre,
                    degrees: oriented.degrees,
                    width: oriented.width,
                    height: oriented.height,
                    scale: factor
                )
            }
            if factor == 1 { return (crop, toGrey) }
            let (scaled, back) = GreyOps.scaled(crop, by: factor)
            return (scaled, toGrey.after(back))
        }
        let kind: Set<Symbology> =
            code.symbology.isEAN ? [.ean13, .upcA] : [code.symbology]
        let symbologies = options.symbologies.intersection(kind)
        guard !symbologies.isEmpty else { return nil }
        var pass = ZXingEngine.Pass(searching: options)
        pass.tryDownscale = false
        var fixed = pass
        fixed.binarizer = .fixedThreshold
        var global = pass
        global.binarizer = .globalHistogram
        // Until one reads this place: the local binarizer, then a fixed threshold and a
        // global histogram (misread bars are often a threshold's doing), then three times.
        // A zbar reading of larger modules first gets ZXing's harder search at its size.
        let large = (moduleWidth(of: code) ?? 0) >= moduleThreshold
        let variants: [(Double, ZXingEngine.Pass)] =
            large
            ? [(1, pass), (1, fixed), (2, pass)]
            : [(2, pass), (2, fixed), (2, global), (3, pass)]
        var twice: (ImageBuffer, PointTransform)?
        for (factor, pass) in variants {
            if factor == 2, twice == nil { twice = image(2) }
            let (scaled, transform) = factor == 2 ? twice! : image(factor)
            var readings =
                ZXingEngine.read(
                    scaled,
                    symbologies: symbologies,
                    pass: pass,
                    maximumSymbols: nil,
                    transform: transform
                ) ?? []
            if readings.isEmpty, code.symbology.isLinear, ZBarEngine.supports(any: symbologies) {
                readings = ZBarEngine.read(
                    scaled,
                    symbologies: symbologies,
                    transform: transform,
                    surroundings: ZBarEngine.Surroundings(grey: grey)
                )
            }
            // Only a reading of this symbol's place: not a neighbour inside the widened box.
            // A part of an ITF (no check digit) is no correction of it.
            let here = readings.filter {
                covers(place, $0) && covers(RegionSearch.widened($0), code)
                    && Merger.isPlausible($0)
                    && !Merger.isPartOfITF($0, code)
            }
            if here.contains(where: { $0.bytes == code.bytes || $0.text == code.text }) {
                return nil
            }
            if let other = here.first { return other }
        }
        return nil
    }

    /// Whether `code` is a UPC-E or EAN-8 from an edge reader: its bars are those of an
    /// EAN-13's or UPC-A's left half in some blurred photos, where ZXing too can read one.
    static func isShortRetail(_ code: Barcode) -> Bool {
        (code.symbology == .upcE || code.symbology == .ean8) && code.engine != .templates
    }

    /// `code`, an EAN or UPC reading, read again by ``BlurredUPCEAN`` where it lies: the
    /// band of the image's rows through its box (of its columns first where the box is
    /// taller than wide, the bars perhaps lying), or, tilted, its rectangle turned upright and
    /// widened by its length each way. zbar's box can span only the half of an EAN-13 it
    /// decoded last, or a single column, so the band runs the image's width; a reading counts
    /// only when it spans `code`'s centre. Nil when the fit reads nothing there.
    static func fitted(_ code: Barcode, in grey: ImageBuffer, options: BarcodeScanOptions)
        -> Barcode?
    {
        let asked = options.symbologies.filter(\.isRetail)
        guard !asked.isEmpty else { return nil }
        let box = code.boundingBox
        let centre = ImagePoint(x: box.x + box.width / 2, y: box.y + box.height / 2)
        func read(_ image: ImageBuffer, _ transform: PointTransform) -> Barcode? {
            guard let reading = BlurredUPCEAN.read(image, asked: asked) else { return nil }
            // Along the bars' axis, in the image read: the band's other symbols are not it.
            let along = transform.inverted().apply(x: Double(centre.x), y: Double(centre.y)).x
            guard along >= reading.left - 2, along <= reading.right + 2 else { return nil }
            return reading.barcode(asked: asked, transform)
        }
        if let place = orientation(of: code) {
            let length = place.width / 1.25
            let (image, transform) = GreyOps.orientedRect(
                grey,
                centre: place.centre,
                degrees: place.degrees,
                width: 3 * length,
                height: place.height,
                scale: 1
            )
            return read(image, transform)
        }
        let pad = max(8, min(box.width, box.height) / 2)
        func alongRows() -> Barcode? {
            guard
                let band = RegionSearch.rowBand(grey, y: box.y - pad, height: box.height + 2 * pad)
            else { return nil }
            return read(band.0, band.1)
        }
        // The bars lying: the columns through the box, turned a quarter clockwise.
        func alongColumns() -> Barcode? {
            let left = max(0, box.x - pad)
            let right = min(grey.width, box.x + box.width + pad)
            guard right - left >= 4 else { return nil }
            let (image, transform) = GreyOps.orientedRect(
                grey,
                centre: (Double(left + right) / 2, Double(grey.height) / 2),
                degrees: 90,
                width: Double(grey.height),
                height: Double(right - left),
                scale: 1
            )
            return read(image, transform)
        }
        // A box longest across the image's rows is a reading along them; a taller one may
        // be either (zbar's box of a single column, a tall symbol).
        return box.height > box.width ? alongColumns() ?? alongRows() : alongRows()
    }

    /// Where a tilted 1D symbol or PDF417 lies, as a rectangle along its rows: its centre,
    /// the direction of its rows (degrees clockwise from the image's rows), and its extent
    /// widened as ``RegionSearch/widened(_:)`` widens a box: an eighth of its length along
    /// it for the quiet zones, two fifths across each way for the bars' height and digits.
    /// Nil within 10° of the image's axes, where the bounding box serves.
    static func orientation(of code: Barcode)
        -> (centre: (x: Double, y: Double), degrees: Double, width: Double, height: Double)?
    {
        let p = code.points.map { (x: Double($0.x), y: Double($0.y)) }
        guard p.count >= 2 else { return nil }
        // ZXing's first two corners run along the rows (a 1D reading's scan line); zbar's
        // quadrilateral is the box of its scan lines, longest along them.
        var (dx, dy) = (p[1].x - p[0].x, p[1].y - p[0].y)
        if code.engine == .zbar, p.count >= 3 {
            let (ex, ey) = (p[2].x - p[1].x, p[2].y - p[1].y)
            if ex * ex + ey * ey > dx * dx + dy * dy { (dx, dy) = (ex, ey) }
        }
        guard dx * dx + dy * dy >= 64 else { return nil }
        let degrees = atan2(dy, dx) * 180 / .pi
        let offAxis = abs(degrees.truncatingRemainder(dividingBy: 90))
        guard min(offAxis, 90 - offAxis) > 10 else { return nil }
        let r = degrees * .pi / 180
        let along = p.map { $0.x * cos(r) + $0.y * sin(r) }
        let across = p.map { -$0.x * sin(r) + $0.y * cos(r) }
        let (a0, a1) = (along.min()!, along.max()!)
        let (n0, n1) = (across.min()!, across.max()!)
        let (midA, midN) = ((a0 + a1) / 2, (n0 + n1) / 2)
        let length = a1 - a0
        return (
            centre: (midA * cos(r) - midN * sin(r), midA * sin(r) + midN * cos(r)),
            degrees: degrees,
            width: length * 1.25,
            height: (n1 - n0) + length * 0.8
        )
    }

    /// Whether the centre of `code`'s box lies in `box`.
    private static func covers(_ box: PixelRect, _ code: Barcode) -> Bool {
        let b = code.boundingBox
        let cx = b.x + b.width / 2
        let cy = b.y + b.height / 2
        return cx >= box.x && cx <= box.x + box.width && cy >= box.y && cy <= box.y + box.height
    }
}
