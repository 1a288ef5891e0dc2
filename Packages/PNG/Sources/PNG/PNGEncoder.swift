internal import CPNG
public import Foundation

/// An error of the PNG encoder, with libpng's message.
public struct PNGEncodingError: Error, Sendable, CustomStringConvertible {
    /// libpng's message, or what was wrong with the input.
    public var message: String
    /// The message.
    public var description: String { "PNG encoding failed: \(message)" }
}

/// Encodes 8-bit grey, grey + alpha, RGB or RGBA pixels as PNG with libpng's simplified
/// write API (`png_image_write_to_memory`: no callbacks, no `longjmp` across Swift frames).
///
/// ```swift
/// let png = try PNGEncoder.encode(width: 2, height: 1, channels: 3, pixels: [255, 0, 0, 0, 0, 255])
/// let back = try PNGImage(decoding: png, name: "round trip")   // 2×1, RGBA
/// ```
public enum PNGEncoder {
    /// The largest width or height encoded.
    public static let maximumSide = 16_384

    /// Encodes `width × height` pixels of `channels` bytes each (1 grey, 2 grey + alpha,
    /// 3 RGB, 4 RGBA), row by row with no padding.
    /// - Throws: ``PNGEncodingError`` for a size outside 1…``maximumSide``, a channel count
    ///   other than 1–4, a pixel count that does not match, or libpng's own failure.
    public static func encode(width: Int, height: Int, channels: Int, pixels: [UInt8])
        throws(PNGEncodingError) -> Data
    {
        guard (1...maximumSide).contains(width), (1...maximumSide).contains(height) else {
            throw PNGEncodingError(
                message: "image size \(width)×\(height) is outside 1…\(maximumSide)"
            )
        }
        guard (1...4).contains(channels) else {
            throw PNGEncodingError(message: "\(channels) channels per pixel; 1 to 4 are encoded")
        }
        let rowBytes = width * channels
        guard pixels.count == rowBytes * height else {
            throw PNGEncodingError(
                message:
                    "\(pixels.count) bytes given for \(width)×\(height) with \(channels) channels (needs \(rowBytes * height))"
            )
        }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        // PNG_FORMAT_GRAY/GA/RGB/RGBA: the flags as macros Swift does not import.
        var format: UInt32 = 0
        if channels >= 3 { format |= PNG_FORMAT_FLAG_COLOR }
        if channels == 2 || channels == 4 { format |= PNG_FORMAT_FLAG_ALPHA }
        image.format = png_uint_32(format)
        var size: png_alloc_size_t = 0
        // First call: the size needed.
        let sized = pixels.withUnsafeBytes { buffer in
            png_image_write_to_memory(
                &image,
                nil,
                &size,
                0,
                buffer.baseAddress,
                png_int_32(rowBytes),
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
                    png_int_32(rowBytes),
                    nil
                )
            }
        }
        guard written != 0 else { throw failure(&image) }
        png_image_free(&image)
        return Data(output.prefix(Int(size)))
    }

    /// Encodes `width × height` pixels, 3 bytes (R, G, B) each, row by row.
    /// - Throws: ``PNGEncodingError`` as ``encode(width:height:channels:pixels:)``.
    public static func encodeRGB(width: Int, height: Int, pixels: [UInt8]) throws(PNGEncodingError)
        -> Data
    {
        try encode(width: width, height: height, channels: 3, pixels: pixels)
    }

    private static func failure(_ image: inout png_image) -> PNGEncodingError {
        let message = withUnsafeBytes(of: image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        png_image_free(&image)
        return PNGEncodingError(message: message.isEmpty ? "libpng reported an error" : message)
    }
}
