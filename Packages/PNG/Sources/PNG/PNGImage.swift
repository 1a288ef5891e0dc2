internal import CPNG
public import Foundation

/// A PNG decoded to 8-bit RGBA pixels through libpng's simplified API (every colour type,
/// bit depth, palette and transparency chunk, gamma-corrected to sRGB), for drawing product
/// images on a terminal without loading the barcode and OCR libraries.
///
/// The size is read from the header before any pixel is decoded, and an image over
/// ``maximumPixels`` is refused. libpng's warnings and errors go into the thrown error,
/// never to stderr.
public struct PNGImage: Sendable, Hashable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Rows top to bottom, 4 bytes (red, green, blue, alpha; not premultiplied) per pixel.
    public let rgba: [UInt8]

    /// The most pixels decoded (64 Mpixel, 256 MiB of RGBA).
    public static let maximumPixels = 64 << 20

    /// Why bytes could not be decoded.
    public struct DecodingError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What went wrong, naming the input.
        public var message: String
        /// The message.
        public var description: String { message }
    }

    /// An image from its pixels (`rgba.count == width * height * 4`).
    public init(width: Int, height: Int, rgba: [UInt8]) {
        precondition(width >= 0 && height >= 0 && rgba.count == width * height * 4)
        self.width = width
        self.height = height
        self.rgba = rgba
    }

    /// Decodes `data`; `name` says what it is in errors (a URL or a file).
    /// - Throws: ``DecodingError`` for bytes that are not a whole PNG, or a PNG too large.
    public init(decoding data: Data, name: String) throws(DecodingError) {
        guard data.count >= 8, data.prefix(8).elementsEqual([137, 80, 78, 71, 13, 10, 26, 10])
        else {
            throw DecodingError(message: "\(name) is not a PNG image (no PNG signature)")
        }
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        let result: Result<(Int, Int, [UInt8]), DecodingError> = data.withUnsafeBytes { raw in
            guard png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count) != 0 else {
                return .failure(Self.failure(&image, name: name, stage: "header"))
            }
            let width = Int(image.width)
            let height = Int(image.height)
            guard width > 0, height > 0,
                width.multipliedReportingOverflow(by: height).partialValue
                    <= Self.maximumPixels, width <= Self.maximumPixels, height <= Self.maximumPixels
            else {
                return .failure(
                    DecodingError(
                        message:
                            "\(name) is \(width)×\(height) pixels, more than the \(Self.maximumPixels >> 20) Mpixel this tool decodes"
                    )
                )
            }
            // PNG_FORMAT_RGBA: PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA (a macro Swift
            // does not import).
            image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
            var pixels = [UInt8](repeating: 0, count: width * height * 4)
            let finished = pixels.withUnsafeMutableBytes { buffer in
                png_image_finish_read(&image, nil, buffer.baseAddress, Int32(width * 4), nil)
            }
            guard finished != 0 else {
                return .failure(Self.failure(&image, name: name, stage: "pixels"))
            }
            return .success((width, height, pixels))
        }
        let (width, height, pixels) = try result.get()
        self.init(width: width, height: height, rgba: pixels)
    }

    private static func failure(_ image: inout png_image, name: String, stage: String)
        -> DecodingError
    {
        let message = withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let reason = message.isEmpty ? "damaged data" : message
        return DecodingError(message: "\(name) is not a readable PNG (\(stage): \(reason))")
    }

    /// The pixel at (`x`, `y`) as (red, green, blue, alpha).
    public func pixel(x: Int, y: Int) -> (UInt8, UInt8, UInt8, UInt8) {
        let index = (y * width + x) * 4
        return (rgba[index], rgba[index + 1], rgba[index + 2], rgba[index + 3])
    }
}
