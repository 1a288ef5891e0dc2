internal import CImageIO
public import Foundation
internal import Synchronization

/// Limits applied before any pixel is decoded.
public struct ImageLimits: Sendable, Hashable, Codable {
    /// The largest width × height accepted, checked from the file's header.
    public var maximumPixelCount: Int

    /// 100 megapixels.
    public static let `default` = ImageLimits(maximumPixelCount: 100_000_000)

    /// Creates limits.
    public init(maximumPixelCount: Int) {
        self.maximumPixelCount = maximumPixelCount
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
        let rowBytes = width * format.channels
        let stride = stride ?? rowBytes
        guard width > 0, height > 0, stride >= rowBytes,
            pixels.count >= stride * (height - 1) + rowBytes
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
        self.width = width
        self.height = height
        self.format = format
        self.stride = stride
        self.pixels = pixels
        self.greyCache = GreyCache()
    }

    /// Decodes an image file (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP).
    ///
    /// The pixel count is checked from the header before decoding.
    /// - Throws: ``ImageError`` naming the path.
    public init(contentsOf url: URL, limits: ImageLimits = .default) throws(ImageError) {
        let data = try Self.readFile(url)
        try self.init(data: data, name: url.path, limits: limits)
    }

    /// Decodes an image held in memory.
    ///
    /// - Parameters:
    ///   - data: the encoded image (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP).
    ///   - name: how errors name this input, such as the path it came from.
    ///   - limits: checked from the header before any pixel is decoded.
    /// - Throws: ``ImageError`` for empty, non-image, truncated, corrupt or oversize data.
    public init(data: Data, name: String = "data", limits: ImageLimits = .default)
        throws(ImageError)
    {
        var decoded = sf_image()
        var message = [CChar](repeating: 0, count: 256)
        let status = data.withUnsafeBytes { raw -> sf_image_status in
            let base = raw.bindMemory(to: UInt8.self).baseAddress
            return sf_image_decode(
                base,
                raw.count,
                UInt64(max(0, limits.maximumPixelCount)),
                &decoded,
                &message,
                message.count
            )
        }
        guard status == SF_IMAGE_OK, let base = decoded.pixels else {
            throw ImageError(
                code: Self.code(for: status),
                input: name,
                message: String(
                    decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                    as: UTF8.self
                )
            )
        }
        defer { sf_image_free(&decoded) }
        let count = Int(decoded.stride) * Int(decoded.height)
        let pixels = [UInt8](UnsafeBufferPointer(start: base, count: count))
        let format: PixelFormat =
            switch decoded.channels {
            case 1: .grey
            case 3: .rgb
            default: .rgba
            }
        self.init(
            uncheckedWidth: Int(decoded.width),
            height: Int(decoded.height),
            format: format,
            stride: Int(decoded.stride),
            pixels: pixels
        )
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
        let x0 = max(0, rect.x)
        let y0 = max(0, rect.y)
        let x1 = min(width, rect.x + rect.width)
        let y1 = min(height, rect.y + rect.height)
        guard x1 > x0, y1 > y0 else { return nil }
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

    private static func code(for status: sf_image_status) -> ImageError.Code {
        switch status {
        case SF_IMAGE_EMPTY: .empty
        case SF_IMAGE_NOT_IMAGE: .notAnImage
        case SF_IMAGE_TRUNCATED: .truncated
        case SF_IMAGE_TOO_LARGE: .tooLarge
        case SF_IMAGE_NO_MEMORY: .outOfMemory
        default: .corrupt
        }
    }

    static func readFile(_ url: URL) throws(ImageError) -> Data {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
            isDirectory.boolValue
        {
            throw ImageError(
                code: .unreadable,
                input: url.path,
                message: "is a directory, not an image file"
            )
        }
        do {
            return try Data(contentsOf: url, options: .mappedIfSafe)
        } catch {
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw ImageError(code: .unreadable, input: url.path, message: "no such file")
            }
            throw ImageError(
                code: .unreadable,
                input: url.path,
                message: "cannot be read",
                cause: error.localizedDescription
            )
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
