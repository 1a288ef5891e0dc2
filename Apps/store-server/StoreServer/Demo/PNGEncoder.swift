internal import CLibPNG
public import Foundation

/// An error of the PNG encoder, with libpng's message.
public struct PNGEncodingError: Error, Sendable, CustomStringConvertible {
    /// libpng's message, or what was wrong with the input.
    public var message: String
    /// The message.
    public var description: String { "PNG encoding failed: \(message)" }
}

/// Encodes 8-bit RGB pixels as PNG with libpng's simplified write API
/// (`png_image_write_to_memory`: no callbacks, no `longjmp` across Swift frames).
public enum PNGEncoder {
    /// Encodes `width × height` pixels, 3 bytes (R, G, B) each, row by row.
    public static func encodeRGB(width: Int, height: Int, pixels: [UInt8]) throws(PNGEncodingError)
        -> Data
    {
        guard width > 0, height > 0, width <= 16_384, height <= 16_384 else {
            throw PNGEncodingError(message: "image size \(width)×\(height) is outside 1…16384")
        }
        guard pixels.count == width * height * 3 else {
            throw PNGEncodingError(
                message:
                    "\(pixels.count) bytes given for \(width)×\(height) RGB (needs \(width * height * 3))"
            )
        }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = png_uint_32(PNG_FORMAT_FLAG_COLOR)
        var size: png_alloc_size_t = 0
        // First call: the size needed.
        let sized = pixels.withUnsafeBytes { buffer in
            png_image_write_to_memory(
                &image,
                nil,
                &size,
                0,
                buffer.baseAddress,
                png_int_32(width * 3),
                nil
            )
        }
        guard sized != 0, size > 0 else { throw failure(&image) }
        var output = [UInt8](repeating: 0, count: Int(size))
        let written = output.withUnsafeMutableBytes { out in
            pixels.withUnsafeBytes { buffer in
                png_image_write_to_memory(
                    &image,
                    out.baseAddress,
                    &size,
                    0,
                    buffer.baseAddress,
                    png_int_32(width * 3),
                    nil
                )
            }
        }
        guard written != 0 else { throw failure(&image) }
        png_image_free(&image)
        return Data(output.prefix(Int(size)))
    }

    private static func failure(_ image: inout png_image) -> PNGEncodingError {
        let message = withUnsafeBytes(of: image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        png_image_free(&image)
        return PNGEncodingError(message: message.isEmpty ? "libpng reported an error" : message)
    }
}
