internal import CImageIO
public import Foundation
internal import Synchronization

/// Limits applied before any pixel is decoded or any more input is read.
public struct ImageLimits: Sendable, Hashable, Codable {
    /// The largest width × height of one frame, checked from the file's header before the
    /// body is read.
    public var maximumPixelCount: Int
    /// The most bytes read from one input (file or stdin); a larger file is refused before it
    /// is read, a longer stream as soon as the limit is passed.
    public var maximumInputBytes: Int
    /// The most frames scanned in one input (TIFF pages, GIF frames); the rest are reported
    /// as not scanned.
    public var maximumFrameCount: Int

    /// 100 megapixels, 1 GiB of input, 1,000 frames.
    public static let `default` = ImageLimits(maximumPixelCount: 100_000_000)

    /// Creates limits. By default an input may hold 1 GiB, or 8 bytes per allowed pixel when
    /// that is more (uncompressed 16-bit RGBA), and 1,000 frames.
    public init(
        maximumPixelCount: Int,
        maximumInputBytes: Int? = nil,
        maximumFrameCount: Int = 1_000
    ) {
        self.maximumPixelCount = max(0, maximumPixelCount)
        let (perPixel, overflow) = self.maximumPixelCount.multipliedReportingOverflow(by: 8)
        self.maximumInputBytes = max(
            0,
            maximumInputBytes ?? max(1 << 30, overflow ? Int.max : perPixel)
        )
        self.maximumFrameCount = max(1, maximumFrameCount)
    }

    private enum CodingKeys: String, CodingKey {
        case maximumPixelCount, maximumInputBytes, maximumFrameCount
    }

    /// Decodes limits; the fields added after `maximumPixelCount` take their defaults when
    /// absent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            maximumPixelCount: try container.decode(Int.self, forKey: .maximumPixelCount),
            maximumInputBytes: try container.decodeIfPresent(Int.self, forKey: .maximumInputBytes),
            maximumFrameCount: try container.decodeIfPresent(Int.self, forKey: .maximumFrameCount)
                ?? 1_000
        )
    }

    /// Whether `width` × `height` fits ``maximumPixelCount`` (without overflow).
    func allows(width: Int, height: Int) -> Bool {
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        return !overflow && pixels <= maximumPixelCount
    }
}

/// 8-bit pixels with their channels, as decoded from a file or given directly.
///
/// Rows are `stride` bytes apart (at least `width × channels`). Decoders read the cheap
/// ``greyscale()`` view; apps that draw keep the colour. Values are immutable and `Sendable`,
/// so one buffer can be scanned from several tasks at once.
public struct ImageBuffer: Sendable {
    /// How each pixel's bytes are laid out.
    public enum PixelFormat: String, Sendable, Codable, CaseIterable {
        /// One byte of luminance.
        case grey
        /// Red, green, blue.
        case rgb
        /// Red, green, blue, alpha (not premultiplied).
        case rgba

        /// Bytes per pixel.
        public var channels: Int {
            switch self {
            case .grey: 1
            case .rgb: 3
            case .rgba: 4
            }
        }
    }

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Bytes from the start of one row to the next.
    public let stride: Int
    /// The channels of each pixel.
    public let format: PixelFormat
    /// The pixel bytes, `stride × height` of them.
    public let pixels: [UInt8]

    private let greyCache: GreyCache

    /// Wraps pixels given directly.
    ///
    /// - Throws: ``ImageError`` with code `invalidPixels` when the sizes do not match.
    public init(
        width: Int,
        height: Int,
        format: PixelFormat,
        stride: Int? = nil,
        pixels: [UInt8]
    ) throws(ImageError) {
        let (rowBytes, rowOverflow) = width.multipliedReportingOverflow(by: format.channels)
        let stride = stride ?? rowBytes
        let (lastRow, lastOverflow) = stride.multipliedReportingOverflow(by: max(0, height - 1))
        guard width > 0, height > 0, !rowOverflow, !lastOverflow, stride >= rowBytes,
            lastRow <= Int.max - rowBytes, pixels.count >= lastRow + rowBytes
        else {
            throw ImageError(
                code: .invalidPixels,
                input: "pixels",
                message:
                    "\(pixels.count) bytes do not hold \(width) x \(height) \(format.rawValue) pixels with stride \(stride)"
            )
        }
        self.init(
            uncheckedWidth: width,
            height: height,
            format: format,
            stride: stride,
            pixels: pixels
        )
    }

    init(uncheckedWidth width: Int, height: Int, format: PixelFormat, stride: Int, pixels: [UInt8])
    {
        // `pixels` holds at least stride × (height - 1) + width × channels bytes.
        self.width = width
        self.height = height
        self.format = format
        self.stride = stride
        self.pixels = pixels
        self.greyCache = GreyCache()
    }

    /// Decodes an image file (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP); the first frame of a
    /// multi-frame file (``ImageFrames`` reads them all).
    ///
    /// The file's size and the pixel count in its header are checked before its body is read.
    /// - Throws: ``ImageError`` naming the path.
    public init(contentsOf url: URL, limits: ImageLimits = .default) throws(ImageError) {
        let frames = try ScanInput.file(url).openFrames(limits: limits, budget: nil)
        guard let first = try frames.next() else {
            throw ImageError(code: .corrupt, input: url.path, message: "the image holds no frame")
        }
        self = first.image
    }

    /// Decodes an image held in memory; the first frame of a multi-frame image.
    ///
    /// - Parameters:
    ///   - data: the encoded image (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP).
    ///   - name: how errors name this input, such as the path it came from.
    ///   - limits: checked from the header before any pixel is decoded.
    /// - Throws: ``ImageError`` for empty, non-image, truncated, corrupt or oversize data.
    public init(data: Data, name: String = "data", limits: ImageLimits = .default)
        throws(ImageError)
    {
        let frames = try ImageFrames(data: data, name: name, limits: limits)
        guard let first = try frames.next() else {
            throw ImageError(code: .corrupt, input: name, message: "the image holds no frame")
        }
        self = first.image
    }

    /// The width and height an encoded image announces in its header, without decoding it.
    ///
    /// - Throws: ``ImageError`` when the data is empty, not an image or its header is unreadable.
    public static func dimensions(of data: Data, name: String = "data") throws(ImageError) -> (
        width: Int, height: Int
    ) {
        var format = SF_FORMAT_UNKNOWN
        var width: Int32 = 0
        var height: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = data.withUnsafeBytes { raw in
            sf_image_probe(
                raw.bindMemory(to: UInt8.self).baseAddress,
                raw.count,
                &format,
                &width,
                &height,
                &message,
                message.count
            )
        }
        guard status == SF_IMAGE_OK else {
            throw ImageError(
                code: code(for: status),
                input: name,
                message: String(
                    decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                    as: UTF8.self
                )
            )
        }
        return (Int(width), Int(height))
    }

    /// The pixel at (x, y) as luminance, with transparent pixels composited over white.
    public func luminance(x: Int, y: Int) -> UInt8 {
        Self.luminance(pixels, offset: y * stride + x * format.channels, format: format)
    }

    /// A grey view of this image: the image itself when it is grey, else a luminance copy
    /// computed once and shared by every copy of this buffer.
    public func greyscale() -> ImageBuffer {
        if format == .grey { return self }
        return greyCache.value {
            var grey = [UInt8](repeating: 0, count: width * height)
            let channels = format.channels
            pixels.withUnsafeBufferPointer { source in
                for y in 0..<height {
                    let row = y * stride
                    let out = y * width
                    for x in 0..<width {
                        grey[out + x] = Self.luminance(
                            source,
                            offset: row + x * channels,
                            format: format
                        )
                    }
                }
            }
            return ImageBuffer(
                uncheckedWidth: width,
                height: height,
                format: .grey,
                stride: width,
                pixels: grey
            )
        }
    }

    /// The part of the image inside `rect`, clipped to the image; `nil` when nothing is left.
    public func cropped(to rect: PixelRect) -> ImageBuffer? {
        guard let inside = rect.clipped(toWidth: width, height: height) else { return nil }
        let (x0, y0, x1, y1) = (
            inside.x, inside.y, inside.x + inside.width, inside.y + inside.height
        )
        let channels = format.channels
        let rowBytes = (x1 - x0) * channels
        var out = [UInt8]()
        out.reserveCapacity(rowBytes * (y1 - y0))
        for y in y0..<y1 {
            let start = y * stride + x0 * channels
            out.append(contentsOf: pixels[start..<(start + rowBytes)])
        }
        return ImageBuffer(
            uncheckedWidth: x1 - x0,
            height: y1 - y0,
            format: format,
            stride: rowBytes,
            pixels: out
        )
    }

    // MARK: - Helpers

    @inline(__always)
    static func luminance<C: RandomAccessCollection>(_ p: C, offset: Int, format: PixelFormat)
        -> UInt8
    where C.Element == UInt8, C.Index == Int {
        switch format {
        case .grey:
            return p[offset]
        case .rgb:
            // ITU-R BT.601 weights in fixed point.
            let v = 306 * Int(p[offset]) + 601 * Int(p[offset + 1]) + 117 * Int(p[offset + 2])
            return UInt8(truncatingIfNeeded: v >> 10)
        case .rgba:
            let v =
                (306 * Int(p[offset]) + 601 * Int(p[offset + 1]) + 117 * Int(p[offset + 2])) >> 10
            let a = Int(p[offset + 3])
            return UInt8(truncatingIfNeeded: (v * a + 255 * (255 - a)) / 255)
        }
    }

    static func code(for status: sf_image_status) -> ImageError.Code {
        switch status {
        case SF_IMAGE_EMPTY: .empty
        case SF_IMAGE_NOT_IMAGE: .notAnImage
        case SF_IMAGE_TRUNCATED: .truncated
        case SF_IMAGE_TOO_LARGE: .tooLarge
        case SF_IMAGE_NO_MEMORY: .outOfMemory
        default: .corrupt
        }
    }
}

/// A rectangle of pixels, origin at the top left.
public struct PixelRect: Sendable, Hashable, Codable {
    /// Left edge.
    public var x: Int
    /// Top edge.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a rectangle.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The axis-aligned box around `points` (empty at the origin for no point).
    public init(bounding points: [ImagePoint]) {
        guard let first = points.first else {
            self.init(x: 0, y: 0, width: 0, height: 0)
            return
        }
        var (x0, y0, x1, y1) = (first.x, first.y, first.x, first.y)
        for p in points {
            x0 = min(x0, p.x)
            y0 = min(y0, p.y)
            x1 = max(x1, p.x)
            y1 = max(y1, p.y)
        }
        self.init(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// The area this rectangle shares with `other`; 0 when they do not overlap.
    package func intersectionArea(with other: PixelRect) -> Int {
        let w = min(x + width, other.x + other.width) - max(x, other.x)
        let h = min(y + height, other.y + other.height) - max(y, other.y)
        return w > 0 && h > 0 ? w * h : 0
    }

    /// The part of this rectangle inside a `width` × `height` image, or `nil` when none is.
    package func clipped(toWidth width: Int, height: Int) -> PixelRect? {
        // Saturating: a rectangle given on the command line may reach past Int.max.
        let x0 = max(0, x)
        let y0 = max(0, y)
        let x1 = min(
            width,
            x.addingReportingOverflow(self.width).overflow ? Int.max : x + self.width
        )
        let y1 = min(
            height,
            y.addingReportingOverflow(self.height).overflow ? Int.max : y + self.height
        )
        guard x1 > x0, y1 > y0 else { return nil }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}

/// The grey view of a colour buffer, made once on first use and shared by copies.
private final class GreyCache: Sendable {
    private let storage = Mutex<ImageBuffer?>(nil)

    func value(_ make: () -> ImageBuffer) -> ImageBuffer {
        if let cached = storage.withLock({ $0 }) { return cached }
        let made = make()
        return storage.withLock { slot in
            if let cached = slot { return cached }
            slot = made
            return made
        }
    }
}

extension ImageBuffer: CustomStringConvertible, CustomDebugStringConvertible {
    /// `ImageBuffer(640x480 rgb, stride 1920)`, without the pixels.
    public var description: String {
        "ImageBuffer(\(width)x\(height) \(format.rawValue), stride \(stride))"
    }

    /// The same as ``description``: pixels are never dumped.
    public var debugDescription: String { description }
}
