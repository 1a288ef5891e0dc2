internal import CTesseract
import Foundation
public import Logging
public import ScannerImages

/// Reads printed text from an ``ImageBuffer`` with Tesseract.
///
/// Thread-safe: call ``read(_:name:)`` from as many threads as you like (for example from
/// ``ImageBatch``); each concurrent call uses its own Tesseract engine from a shared pool,
/// created on first use and kept for the next call, so a batch pays the model load once per
/// worker. Creating a reader loads nothing; it checks the options and finds the tessdata.
public struct TextReader: Sendable {
    /// The options this reader applies.
    public let options: OCRScanOptions
    /// The tessdata directory used.
    public let tessdataPath: String
    private let logger: Logger
    private let key: TesseractPool.Key

    /// Checks `options` (languages present, regular expressions valid) without loading a model.
    public init(
        options: OCRScanOptions = .auto,
        logger: Logger = Logger(label: "shopfloor.scanner.ocr")
    )
        throws(OCRError)
    {
        if options.minimumTextHeight < 0 {
            throw OCRError(
                code: .invalidOptions,
                input: "options",
                message: "minimum text height is negative"
            )
        }
        if let r = options.regionOfInterest, r.width <= 0 || r.height <= 0 {
            throw OCRError(
                code: .invalidOptions,
                input: "options",
                message: "region of interest \(r) is empty"
            )
        }
        _ = try TextMatcher(validators: options.validators)
        self.options = options
        self.logger = logger
        self.tessdataPath = try TessdataLocator.locate(
            languages: options.languages,
            configured: options.tessdataPath
        )
        self.key = TesseractPool.Key(tessdata: tessdataPath, languages: options.languageString)
        let limit = TesseractPool.openMPThreadLimit
        if limit > 1 && ProcessInfo.processInfo.activeProcessorCount > 1 {
            logger.debug(
                "OMP_THREAD_LIMIT was not 1 at process start; parallel OCR will contend",
                metadata: ["ompThreadLimit": "\(limit)"]
            )
        }
    }

    /// Whether libtesseract's OpenMP runs one thread per engine (`OMP_THREAD_LIMIT=1` in the
    /// environment when the process started), the right setting for parallel recognition.
    public static var isOpenMPSingleThreaded: Bool { TesseractPool.openMPThreadLimit == 1 }

    /// Recognises the text of `image` (`name` is used in errors and logs).
    public func read(_ image: ImageBuffer, name: String = "image") throws(OCRError) -> TextResult {
        var grey = image.greyscale()
        var origin = (x: 0, y: 0)
        if let region = options.regionOfInterest {
            guard let cropped = grey.cropped(to: region) else {
                throw OCRError(
                    code: .invalidOptions,
                    input: name,
                    message:
                        "region of interest \(region) is outside the \(image.width)×\(image.height) image"
                )
            }
            grey = cropped
            origin = (max(0, region.x), max(0, region.y))
        }
        guard grey.width >= 3, grey.height >= 3 else {
            return TextResult(lines: [], matches: [], scale: 1, deskewDegrees: 0, passes: 0)
        }
        // Work on a packed copy so stride == width.
        if grey.stride != grey.width,
            let packed = grey.cropped(
                to: PixelRect(x: 0, y: 0, width: grey.width, height: grey.height)
            )
        {
            grey = packed
        }

        let mask = TextPreprocess.inkMask(grey)
        var toOriginal = PointTransform.translation(Double(origin.x), Double(origin.y))
        var work = grey
        var scale = 1.0
        if options.upscalesSmallText {
            let lineHeight = TextPreprocess.medianLineHeight(
                mask: mask,
                width: grey.width,
                height: grey.height
            )
            scale = TextPreprocess.upscaleFactor(
                lineHeight: lineHeight,
                width: grey.width,
                height: grey.height
            )
            if scale > 1 {
                // Bicubic: bilinear interpolation blurs a one- or two-pixel stroke into a ramp
                // (at 50 dpi the character error rate was 0.173 with it, 0.099 with this).
                let (scaled, back) = TextPreprocess.scaledBicubic(grey, by: scale)
                work = scaled
                toOriginal = toOriginal.after(back)
            }
        }
        // The image as it is, and for `accurate` and `auto` also deskewed (measured on the
        // upscaled image, where strokes are thick enough), which is then tried first. The
        // measure needs no recognition pass, so `auto` straightens before its first pass.
        let plain = Candidate(image: work, transform: toOriginal, deskew: 0)
        var candidates = [plain]
        if options.level != .fast {
            let workMask = scale > 1 ? TextPreprocess.inkMask(work) : mask
            let angle = TextPreprocess.skewAngle(
                mask: workMask,
                width: work.width,
                height: work.height
            )
            if abs(angle) >= 0.3 {
                let (rotated, back) = TextPreprocess.rotatedSmooth(work, degrees: -angle)
                candidates.insert(
                    Candidate(image: rotated, transform: toOriginal.after(back), deskew: angle),
                    at: 0
                )
            }
        }
        logger.debug(
            "ocr preprocess",
            metadata: [
                "input": "\(name)", "scale": "\(scale)", "deskew": "\(candidates[0].deskew)",
            ]
        )
        let matcher = try TextMatcher(validators: options.validators)
        let level = options.level
        // Text upscaled this much was small in the original (about 75 dpi and less for
        // 11 pt): its characters are so few pixels that `auto` trusts a pass on it only with
        // a higher confidence.
        let smallText = scale >= Self.smallTextScale
        var passes = 0
        let chosen: (Pass, Candidate) = try TesseractPool.shared.withEngine(key, input: name) {
            (engine) throws(OCRError) -> (Pass, Candidate) in
            func pass(_ candidate: Candidate, _ mode: TessPageSegMode) throws(OCRError) -> Pass {
                passes += 1
                return try recognize(engine, candidate.image, mode: mode, name: name)
            }
            var best = (try pass(candidates[0], PSM_AUTO), candidates[0])
            switch level {
            case .fast:
                return best
            case .auto:
                // The first pass (straightened), kept unless it is unsure: no text, a low
                // confidence (a higher bar for small text), a validator that matches nothing.
                // Then the accurate level's further passes.
                guard
                    Self.isUnsure(
                        best.0,
                        smallText: smallText,
                        matcher: matcher,
                        transform: candidates[0].transform
                    )
                else { return best }
            case .accurate:
                guard best.0.meanConfidence < 0.85 || best.0.lines.isEmpty else { return best }
            }
            for candidate in candidates.dropFirst() {
                let other = try pass(candidate, PSM_AUTO)
                if other.score > best.0.score * 1.05 { best = (other, candidate) }
            }
            if level == .auto,
                !Self.isUnsure(
                    best.0,
                    smallText: smallText,
                    matcher: matcher,
                    transform: best.1.transform
                )
            {
                return best
            }
            let image = best.1
            for mode in [PSM_SINGLE_BLOCK, PSM_SPARSE_TEXT] {
                let other = try pass(image, mode)
                if other.score > best.0.score * 1.05 { best = (other, image) }
            }
            return best
        }
        let lines = chosen.0.lines.map { Self.mapped($0, chosen.1.transform) }
        let deskew = chosen.1.deskew
        let minimum = options.minimumTextHeight
        let kept: [RecognizedLine] = lines.compactMap { line in
            guard minimum > 0 else { return line }
            let words = line.words.filter { $0.box.height >= minimum }
            guard !words.isEmpty else { return nil }
            var copy = line
            copy.words = words
            copy.text = words.map(\.text).joined(separator: " ")
            copy.box = PixelRect.union(words.map(\.box))
            return copy
        }
        let matches = options.validators.isEmpty ? [] : matcher.matches(in: kept)
        return TextResult(
            lines: kept,
            matches: matches,
            scale: scale,
            deskewDegrees: deskew,
            passes: passes
        )
    }

    /// The upscale factor from which `auto` treats text as small (see ``read(_:name:)``).
    static let smallTextScale = 2.5

    /// Whether a pass leaves room for doubt: no text, a low mean confidence (a higher bar for
    /// small text), or validators that accept nothing in it.
    ///
    /// The bars are low on purpose: measured on 100 generated labels (300-50 dpi, a third
    /// rotated, some noisy, blurred or low in contrast), straightening before the first pass
    /// brings almost all of the accurate level's gain; the further passes at the accurate
    /// level's bar (0.85) cost 0.5 passes per image for a character error rate lower by at
    /// most 0.001 at any resolution, at these bars 0.1 for the same.
    private static func isUnsure(
        _ pass: Pass,
        smallText: Bool,
        matcher: TextMatcher,
        transform: PointTransform
    ) -> Bool {
        guard !pass.lines.isEmpty else { return true }
        if pass.meanConfidence < (smallText ? 0.7 : 0.6) { return true }
        if !matcher.isEmpty, matcher.matches(in: pass.lines.map { mapped($0, transform) }).isEmpty {
            return true
        }
        return false
    }

    /// A preprocessed image to recognise, with the way back to the original's coordinates.
    private struct Candidate {
        var image: ImageBuffer
        var transform: PointTransform
        var deskew: Double
    }

    /// One recognition pass, in the working image's coordinates.
    private struct Pass {
        var lines: [RecognizedLine]
        var meanConfidence: Double {
            let words = lines.flatMap(\.words)
            guard !words.isEmpty else { return 0 }
            return words.map(\.confidence).reduce(0, +) / Double(words.count)
        }
        /// Confidently read characters.
        var score: Double {
            lines.flatMap(\.words).reduce(0) { $0 + $1.confidence * Double($1.text.count) }
        }
    }

    private func recognize(
        _ engine: TesseractEngine,
        _ image: ImageBuffer,
        mode: TessPageSegMode,
        name: String
    ) throws(OCRError) -> Pass {
        let h = engine.handle
        sf_TessBaseAPISetPageSegMode(h, mode)
        _ = sf_TessBaseAPISetVariable(
            h,
            "tessedit_char_whitelist",
            options.characterWhitelist ?? ""
        )
        image.pixels.withUnsafeBufferPointer { p in
            sf_TessBaseAPISetImage(
                h,
                p.baseAddress,
                Int32(image.width),
                Int32(image.height),
                1,
                Int32(image.stride)
            )
        }
        sf_TessBaseAPISetSourceResolution(h, 300)
        guard sf_TessBaseAPIRecognize(h, nil) == 0 else {
            throw OCRError(
                code: .engineFailed,
                input: name,
                message: "Tesseract could not recognise the image"
            )
        }
        guard let iterator = sf_TessBaseAPIGetIterator(h) else { return Pass(lines: []) }
        defer { sf_TessResultIteratorDelete(iterator) }
        let page = sf_TessResultIteratorGetPageIterator(iterator)
        var lines: [RecognizedLine] = []
        var current: RecognizedLine?
        func box(_ level: TessPageIteratorLevel) -> PixelRect {
            var l: Int32 = 0
            var t: Int32 = 0
            var r: Int32 = 0
            var b: Int32 = 0
            _ = sf_TessPageIteratorBoundingBox(page, level, &l, &t, &r, &b)
            return PixelRect(x: Int(l), y: Int(t), width: Int(r - l), height: Int(b - t))
        }
        func finish() {
            if var line = current, !line.words.isEmpty {
                line.text = line.words.map(\.text).joined(separator: " ")
                lines.append(line)
            }
            current = nil
        }
        repeat {
            if sf_TessPageIteratorIsAtBeginningOf(page, RIL_TEXTLINE) != 0 {
                finish()
                current = RecognizedLine(
                    text: "",
                    confidence: Double(sf_TessResultIteratorConfidence(iterator, RIL_TEXTLINE))
                        / 100,
                    box: box(RIL_TEXTLINE),
                    words: []
                )
            }
            guard let cText = sf_TessResultIteratorGetUTF8Text(iterator, RIL_WORD) else { continue }
            let text = String(cString: cText).trimmingCharacters(in: .whitespacesAndNewlines)
            sf_TessDeleteText(cText)
            guard !text.isEmpty else { continue }
            let word = RecognizedWord(
                text: text,
                confidence: max(
                    0,
                    min(1, Double(sf_TessResultIteratorConfidence(iterator, RIL_WORD)) / 100)
                ),
                box: box(RIL_WORD)
            )
            if current == nil {
                current = RecognizedLine(
                    text: "",
                    confidence: word.confidence,
                    box: word.box,
                    words: []
                )
            }
            current?.words.append(word)
        } while sf_TessResultIteratorNext(iterator, RIL_WORD) != 0
        finish()
        for i in lines.indices { lines[i].confidence = max(0, min(1, lines[i].confidence)) }
        return Pass(lines: lines)
    }

    /// A box from working-image coordinates to the original's (the bounding box of its corners).
    private static func mapped(_ rect: PixelRect, _ t: PointTransform) -> PixelRect {
        let corners = [
            ImagePoint(x: rect.x, y: rect.y), ImagePoint(x: rect.x + rect.width, y: rect.y),
            ImagePoint(x: rect.x, y: rect.y + rect.height),
            ImagePoint(x: rect.x + rect.width, y: rect.y + rect.height),
        ].map(t.apply)
        let x0 = corners.map(\.x).min()!
        let y0 = corners.map(\.y).min()!
        return PixelRect(
            x: x0,
            y: y0,
            width: corners.map(\.x).max()! - x0,
            height: corners.map(\.y).max()! - y0
        )
    }

    private static func mapped(_ line: RecognizedLine, _ t: PointTransform) -> RecognizedLine {
        var copy = line
        copy.box = mapped(line.box, t)
        copy.words = line.words.map {
            RecognizedWord(text: $0.text, confidence: $0.confidence, box: mapped($0.box, t))
        }
        return copy
    }
}
