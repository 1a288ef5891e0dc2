internal import CImageIO
public import Foundation

extension ImageBuffer {
    /// The image as PNG bytes, encoded with libpng (8 bits per channel, fast compression).
    ///
    /// - Throws: ``ImageError`` with code `outOfMemory` when the encoding does not fit in memory.
    public func pngData(name: String = "image") throws(ImageError) -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 200)
        let status = pixels.withUnsafeBufferPointer { p in
            sf_png_encode(
                p.baseAddress,
                Int32(width),
                Int32(height),
                Int32(format.channels),
                stride,
                &out,
                &length,
                &message,
                message.count
            )
        }
        guard status == SF_IMAGE_OK, let out else {
            let detail = String(decoding: message.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self)
            throw ImageError(
                code: .outOfMemory,
                input: name,
                message: "could not encode the PNG",
                cause: detail.isEmpty ? nil : detail
            )
        }
        defer { free(out) }
        return Data(bytes: out, count: length)
    }

    /// Writes the image as a PNG file at `url`, whole or not at all: into a temporary file
    /// beside it, then renamed over it.
    ///
    /// - Throws: ``ImageError`` with code `unwritable` naming the file and the system's reason.
    public func writePNG(to url: URL) throws(ImageError) {
        let data = try pngData(name: url.path)
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw ImageError(
                code: .unwritable,
                input: url.path,
                message: "could not write the PNG",
                cause: (error as NSError).localizedFailureReason ?? "\(error)"
            )
        }
    }
}
