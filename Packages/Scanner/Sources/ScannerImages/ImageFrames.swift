internal import CImageIO
public import Foundation
internal import Glibc

/// The container formats `scan` reads, recognised from their first bytes.
public enum ImageFormat: String, Sendable, Hashable, Codable, CaseIterable {
    /// PNG.
    case png
    /// JPEG (JFIF, Exif, Adobe CMYK).
    case jpeg
    /// WebP.
    case webp
    /// TIFF: every page.
    case tiff
    /// GIF: every frame.
    case gif
    /// PBM, PGM, PPM, PAM.
    case pnm
    /// Windows bitmap, uncompressed or RLE.
    case bmp
    /// JPEG 2000.
    case jpeg2000

    /// File name extensions (lower case) that directory walks pick up.
    public static let fileExtensions: Set<String> = [
        "png", "jpg", "jpeg", "webp", "tif", "tiff", "gif", "pnm", "pbm", "pgm", "ppm", "bmp",
    ]

    /// The format of encoded image bytes from their magic number, or nil.
    public init?(sniffing bytes: Data) {
        let format = bytes.withUnsafeBytes { raw in
            sf_image_sniff(raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
        }
        self.init(format)
    }

    init?(_ format: sf_image_format) {
        switch format {
        case SF_FORMAT_PNG: self = .png
        case SF_FORMAT_JPEG: self = .jpeg
        case SF_FORMAT_WEBP: self = .webp
        case SF_FORMAT_TIFF: self = .tiff
        case SF_FORMAT_GIF: self = .gif
        case SF_FORMAT_PNM: self = .pnm
        case SF_FORMAT_BMP: self = .bmp
        case SF_FORMAT_JP2: self = .jpeg2000
        default: return nil
        }
    }
}

/// One decoded frame of an image and where it sits in the file.
public struct ImageFrame: Sendable {
    /// The frame's position, from 0.
    public var index: Int
    /// How many frames the file holds (1 for single-image formats).
    public var count: Int
    /// The pixels.
    public var image: ImageBuffer
}

/// The frames of one encoded image, decoded one at a time: every page of a TIFF, every
/// frame of a GIF (composited as a viewer shows it), the one image of other formats.
///
/// ```swift
/// let frames = try ImageFrames(data: gif, name: "label.gif")
/// while let frame = try frames.next() { print(frame.index, reader.scan(frame.image)) }
/// ```
///
/// Each frame is checked against ``ImageLimits/maximumPixelCount`` before it is decoded,
/// and only one frame's pixels exist at a time. Not for use from several threads at once
/// (it owns one C decoder); frames it returns are ordinary, `Sendable` buffers.
public final class ImageFrames {
    /// How errors name the input.
    public let name: String
    /// The container format.
    public let format: ImageFormat
    /// How many frames the image holds, up to ``ImageLimits/maximumFrameCount``.
    public let frameCount: Int
    /// Whether the image holds more frames than ``ImageLimits/maximumFrameCount``; those are
    /// not decoded, and ``next()`` throws after the last allowed one.
    public let hasMoreFrames: Bool
    /// The largest frame's width × height.
    public let largestFramePixels: Int

    private let bytes: EncodedBytes
    private let handle: OpaquePointer
    /// The memory this image holds from a batch's ``MemoryBudget``, returned with it.
    var reservation: MemoryReservation?
    private var nextIndex = 0
    private var failed = false

    /// Opens an image held in memory (copied once into the decoder's buffer).
    /// - Throws: ``ImageError`` for empty, non-image, truncated, corrupt or oversize data.
    public convenience init(data: Data, name: String = "data", limits: ImageLimits = .default)
        throws(ImageError)
    {
        let bytes = EncodedBytes(capacity: data.count)
        data.withUnsafeBytes { bytes.append($0) }
        try self.init(bytes: bytes, name: name, limits: limits)
    }

    init(bytes: EncodedBytes, name: String, limits: ImageLimits) throws(ImageError) {
        self.bytes = bytes
        self.name = name
        var handle: OpaquePointer?
        var message = [CChar](repeating: 0, count: 256)
        let maxFrames = Int32(clamping: limits.maximumFrameCount)
        let status = sf_frames_open(
            bytes.base,
            bytes.count,
            UInt64(limits.maximumPixelCount),
            maxFrames,
            &handle,
            &message,
            message.count
        )
        guard status == SF_IMAGE_OK, let handle else {
            throw ImageError(
                code: ImageBuffer.code(for: status),
                input: name,
                message: Self.text(message)
            )
        }
        self.handle = handle
        self.format = ImageFormat(sf_frames_format(handle)) ?? .png
        let count = Int(sf_frames_count(handle))
        self.hasMoreFrames = count > limits.maximumFrameCount
        self.frameCount = min(count, limits.maximumFrameCount)
        self.largestFramePixels = Int(clamping: sf_frames_largest(handle))
    }

    deinit { sf_frames_close(handle) }

    /// Decodes the next frame, or returns nil after the last.
    /// - Throws: ``ImageError`` naming the input (and the frame, in a multi-frame image) when
    ///   a frame cannot be decoded (no later frame is decoded then), or, after the last
    ///   allowed frame, `tooLarge` when the image holds more than the limit.
    public func next() throws(ImageError) -> ImageFrame? {
        guard !failed else { return nil }
        guard nextIndex < frameCount else {
            if hasMoreFrames {
                failed = true
                throw ImageError(
                    code: .tooLarge,
                    input: name,
                    message:
                        "holds more than \(frameCount) frames; only the first \(frameCount) were scanned"
                )
            }
            return nil
        }
        var message = [CChar](repeating: 0, count: 256)
        var width: Int32 = 0
        var height: Int32 = 0
        var channels: Int32 = 0
        var status = sf_frames_next(handle, &width, &height, &channels, &message, message.count)
        if status == SF_IMAGE_END {
            nextIndex = frameCount
            return nil
        }
        guard status == SF_IMAGE_OK, width > 0, height > 0, [1, 3, 4].contains(channels) else {
            throw frameError(status, message)
        }
        let stride = Int(width) * Int(channels)
        let (size, overflow) = stride.multipliedReportingOverflow(by: Int(height))
        guard !overflow else { throw frameError(SF_IMAGE_TOO_LARGE, message) }
        // Decoded straight into the Swift array: a frame's pixels exist once.
        let pixels = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            status = sf_frames_read(handle, buffer.baseAddress, stride, &message, message.count)
            initialized = status == SF_IMAGE_OK ? size : 0
        }
        guard status == SF_IMAGE_OK else { throw frameError(status, message) }
        let index = nextIndex
        nextIndex += 1
        let format: ImageBuffer.PixelFormat =
            switch channels {
            case 1: .grey
            case 3: .rgb
            default: .rgba
            }
        return ImageFrame(
            index: index,
            count: frameCount,
            image: ImageBuffer(
                uncheckedWidth: Int(width),
                height: Int(height),
                format: format,
                stride: stride,
                pixels: pixels
            )
        )
    }

    private func frameError(_ status: sf_image_status, _ message: [CChar]) -> ImageError {
        failed = true
        let text = Self.text(message)
        return ImageError(
            code: ImageBuffer.code(for: status),
            input: name,
            message: frameCount > 1 ? "frame \(nextIndex): \(text)" : text
        )
    }

    static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Encoded image bytes in one growing allocation whose address the C decoder keeps; owned
/// by one ``ImageFrames`` (or the reader filling it) at a time.
final class EncodedBytes {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Makes room for `additional` more bytes.
    func reserve(_ additional: Int) {
        guard count + additional > capacity else { return }
        let grown = max(count + additional, capacity * 2)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if let source = bytes.baseAddress {
            (base + count).update(
                from: source.assumingMemoryBound(to: UInt8.self),
                count: bytes.count
            )
        }
        count += bytes.count
    }

    /// Reads once from `fd` into the free space (at most `limit` bytes); the `read` result.
    func read(from fd: Int32, upTo limit: Int) -> Int {
        reserve(limit)
        let result = Glibc.read(fd, base + count, limit)
        if result > 0 { count += result }
        return result
    }

    var data: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
}
