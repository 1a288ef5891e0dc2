internal import CImageIO
import Foundation
internal import Glibc

/// A command line's inputs turned into ``ScanInput``s: files as given, `-` as stdin,
/// directories walked (with `recursive`) for image files, sorted; everything skipped is
/// reported, never dropped in silence.
///
/// ```swift
/// let collected = InputCollection(["shelf/", "-"], recursive: true)
/// for problem in collected.skipped { print("error: \(problem)") }
/// ```
public struct InputCollection: Sendable {
    /// The inputs, in command-line order; a directory's images sorted by their bytes.
    public var inputs: [ScanInput] = []
    /// What was not collected and why (a directory without `recursive`, an unreadable
    /// directory, a path too long for the system, a special file with an image name, a
    /// broken link).
    public var skipped: [SkippedInput] = []

    /// Collects `arguments`. Hidden entries (names starting with `.`) and files without an
    /// image extension (``ImageFormat/fileExtensions``) are not inputs; links to directories
    /// are not followed (no loops).
    public init(_ arguments: [String], recursive: Bool) {
        for argument in arguments {
            if argument == "-" {
                inputs.append(ScanInput(name: "-", source: .standardInput))
                continue
            }
            var info = stat()
            guard stat(argument, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                // Missing and unreadable files are reported when they are read, in order.
                inputs.append(
                    ScanInput(name: argument, source: .file(URL(fileURLWithPath: argument)))
                )
                continue
            }
            guard recursive else {
                skipped.append(SkippedInput(path: argument, reason: .directory))
                continue
            }
            var found: [[UInt8]] = []
            let base = Array(argument.utf8)
            walk(
                base.last == UInt8(ascii: "/") && base.count > 1 ? Array(base.dropLast()) : base,
                into: &found
            )
            found.sort { $0.lexicographicallyPrecedes($1) }
            inputs.append(contentsOf: found.map(Self.input(forPath:)))
        }
    }

    static func input(forPath path: [UInt8]) -> ScanInput {
        ScanInput(name: TerminalText.name(path), source: .path(path))
    }

    private mutating func walk(_ directory: [UInt8], into found: inout [[UInt8]]) {
        guard
            let handle = (directory + [0]).withUnsafeBufferPointer({ buffer in
                buffer.withMemoryRebound(to: CChar.self) { opendir($0.baseAddress!) }
            })
        else {
            skipped.append(
                SkippedInput(path: TerminalText.name(directory), reason: .unreadable(errno: errno))
            )
            return
        }
        defer { closedir(handle) }
        var subdirectories: [[UInt8]] = []
        while true {
            errno = 0
            guard let entry = readdir(handle) else {
                if errno != 0 {
                    skipped.append(
                        SkippedInput(
                            path: TerminalText.name(directory),
                            reason: .unreadable(errno: errno)
                        )
                    )
                }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            // Hidden entries, "." and ".." are not inputs.
            guard let first = name.first, first != UInt8(ascii: ".") else { continue }
            let path = directory + [UInt8(ascii: "/")] + name
            guard path.count < Int(PATH_MAX) else {
                skipped.append(SkippedInput(path: TerminalText.name(path), reason: .nameTooLong))
                continue
            }
            var info = stat()
            let linked = (path + [0]).withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { pointer -> (Int32, Bool) in
                    var own = stat()
                    guard lstat(pointer.baseAddress!, &own) == 0 else { return (errno, false) }
                    if (own.st_mode & S_IFMT) == S_IFLNK {
                        return stat(pointer.baseAddress!, &info) == 0 ? (0, true) : (errno, true)
                    }
                    info = own
                    return (0, false)
                }
            }
            let isImageName = Self.hasImageExtension(name)
            if linked.0 != 0 {
                if isImageName || !linked.1 {
                    skipped.append(
                        SkippedInput(
                            path: TerminalText.name(path),
                            reason: linked.1 ? .brokenLink : .unreadable(errno: linked.0)
                        )
                    )
                }
                continue
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                // Links to directories are not followed: a link loop would never end.
                if !linked.1 { subdirectories.append(path) }
            case S_IFREG:
                if isImageName { found.append(path) }
            default:
                if isImageName {
                    skipped.append(
                        SkippedInput(path: TerminalText.name(path), reason: .notRegularFile)
                    )
                }
            }
        }
        for subdirectory in subdirectories { walk(subdirectory, into: &found) }
    }

    static func hasImageExtension(_ name: [UInt8]) -> Bool {
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > name.startIndex else {
            return false
        }
        let ext = String(decoding: name[(dot + 1)...], as: UTF8.self).lowercased()
        return ImageFormat.fileExtensions.contains(ext)
    }
}

/// A path a command line named that is not scanned, and why.
public struct SkippedInput: Sendable, Hashable, CustomStringConvertible {
    /// Why a path was skipped.
    public enum Reason: Sendable, Hashable {
        /// A directory given without recursion.
        case directory
        /// A directory or entry that could not be read (`errno`).
        case unreadable(errno: Int32)
        /// The path is longer than the system allows (`PATH_MAX`).
        case nameTooLong
        /// An image name on a FIFO, socket or device.
        case notRegularFile
        /// A symbolic link to nothing.
        case brokenLink
    }

    /// The path, escaped for a terminal (``TerminalText/escaped(_:)``).
    public var path: String
    /// Why it was skipped.
    public var reason: Reason

    /// Creates a skipped input.
    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    /// `<path>: <why>; skipped` (escaped for a terminal).
    public var description: String {
        let why =
            switch reason {
            case .directory: "is a directory"
            case .unreadable(let errno): "cannot be read (\(String(cString: strerror(errno))))"
            case .nameTooLong: "the path is longer than the system allows"
            case .notRegularFile: "is not a regular file"
            case .brokenLink: "is a symbolic link to nothing"
            }
        return "\(TerminalText.escaped(path)): \(why); skipped"
    }
}

/// Names and messages made safe to print on a terminal.
public enum TerminalText {
    /// `text` with control characters (C0, DEL, C1; a newline or an escape sequence in a file
    /// name) written as `\xHH`, and backslashes doubled, so a hostile file name cannot move
    /// the cursor, change colours or forge a line.
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: out += "\\\\"
            case 0..<0x20, 0x7F..<0xA0:
                out += "\\x" + String(format: "%02X", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A path's bytes as a name: the UTF-8 text when valid, else the valid parts with each
    /// other byte as `\xHH`.
    public static func name(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var out = ""
        var index = 0
        while index < bytes.count {
            // The longest valid UTF-8 sequence starting here (1-4 bytes), else one raw byte.
            var taken = false
            for length in (1...4).reversed() where index + length <= bytes.count {
                if let piece = String(validating: bytes[index..<(index + length)], as: UTF8.self),
                    piece.unicodeScalars.count == 1
                {
                    out += piece
                    index += length
                    taken = true
                    break
                }
            }
            if !taken {
                out += "\\x" + String(format: "%02X", bytes[index])
                index += 1
            }
        }
        return out
    }
}

extension ScanInput {
    /// Bytes read before the header is checked: enough for every format's header except a
    /// TIFF whose first directory follows its pixels.
    static let headerBytes = 256 * 1024

    /// Reads this input within `limits` and opens its frames, holding memory from `budget`
    /// while the returned frames exist.
    ///
    /// A file's size is checked before anything is read, the header's pixel count before the
    /// body is read (a prefix of ``headerBytes``), and the budget is reserved for the input's
    /// bytes and its largest frame before the body is read.
    func openFrames(limits: ImageLimits, budget: MemoryBudget?) throws(ImageError) -> ImageFrames {
        switch source {
        case .data(let data):
            let frames = try ImageFrames(data: data, name: name, limits: limits)
            frames.reservation = budget?.reserve(
                data.count + MemoryBudget.estimate(pixels: frames.largestFramePixels)
            )
            return frames
        case .image:
            throw ImageError(
                code: .invalidPixels,
                input: name,
                message: "holds pixels, not an encoded image"
            )
        case .standardInput:
            return try read(fd: 0, knownSize: nil, limits: limits, budget: budget)
        case .file, .path:
            let fd = Self.open(source)
            guard fd >= 0 else {
                let error = errno
                throw ImageError(
                    code: .unreadable,
                    input: name,
                    message: error == ENOENT ? "no such file" : "cannot be read",
                    cause: error == ENOENT ? nil : String(cString: strerror(error))
                )
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                throw ImageError(
                    code: .unreadable,
                    input: name,
                    message: "cannot be read",
                    cause: String(cString: strerror(errno))
                )
            }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                throw ImageError(
                    code: .unreadable,
                    input: name,
                    message: "is a directory, not an image file"
                )
            }
            let size = (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : nil
            return try read(fd: fd, knownSize: size, limits: limits, budget: budget)
        }
    }

    /// Opens a file source for reading (-1 with `errno` on failure).
    private static func open(_ source: Source) -> Int32 {
        let path: [UInt8]
        switch source {
        case .file(let url): path = Array(url.path.utf8)
        case .path(let bytes): path = bytes
        default: return -1
        }
        return (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { pointer -> Int32 in
                var fd: Int32
                repeat {
                    fd = Glibc.open(pointer.baseAddress!, O_RDONLY | O_CLOEXEC)
                } while fd < 0 && errno == EINTR
                return fd
            }
        }
    }

    private func read(fd: Int32, knownSize: Int?, limits: ImageLimits, budget: MemoryBudget?)
        throws(ImageError) -> ImageFrames
    {
        let limit = limits.maximumInputBytes
        if let knownSize, knownSize > limit {
            throw ImageError(
                code: .tooLarge,
                input: name,
                message: "is \(knownSize) bytes, more than the limit of \(limit) bytes; not read"
            )
        }
        let bytes = EncodedBytes(
            capacity: min(knownSize.map { $0 + 1 } ?? Self.headerBytes, Self.headerBytes + 1)
        )
        var ended = try fill(bytes, from: fd, until: min(Self.headerBytes, limit + 1), limit: limit)
        // The header, from the prefix: refuse a non-image or an oversize one before the body.
        var format = SF_FORMAT_UNKNOWN
        var width: Int32 = 0
        var height: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = sf_image_probe(
            bytes.base,
            bytes.count,
            &format,
            &width,
            &height,
            &message,
            message.count
        )
        var pixels = limits.maximumPixelCount
        if status == SF_IMAGE_OK {
            guard limits.allows(width: Int(width), height: Int(height)) else {
                throw ImageError(
                    code: .tooLarge,
                    input: name,
                    message:
                        "the image is \(width) x \(height) pixels, more than the limit of \(limits.maximumPixelCount); not decoded"
                )
            }
            pixels = Int(width) * Int(height)
        } else if ended || !Self.mayNeedMoreBytes(status, format) {
            throw ImageError(
                code: ImageBuffer.code(for: status),
                input: name,
                message: ImageFrames.text(message)
            )
        }
        // From here the input's memory counts against the budget: wait for room first.
        let reserved = (knownSize ?? bytes.count) + MemoryBudget.estimate(pixels: pixels)
        let reservation = budget?.reserve(reserved)
        if !ended { ended = try fill(bytes, from: fd, until: limit + 1, limit: limit) }
        let frames = try ImageFrames(bytes: bytes, name: name, limits: limits)
        let needed = bytes.count + MemoryBudget.estimate(pixels: frames.largestFramePixels)
        if let budget, needed > reserved {
            // A later TIFF page is larger than the first: hold what it needs instead.
            reservation?.release()
            frames.reservation = budget.reserve(needed)
        } else {
            frames.reservation = reservation
        }
        return frames
    }

    /// Whether a header that did not probe from a prefix may still probe from the whole
    /// input: a header past the prefix, or a format whose header leptonica reads only whole.
    private static func mayNeedMoreBytes(_ status: sf_image_status, _ format: sf_image_format)
        -> Bool
    {
        status == SF_IMAGE_TRUNCATED
            || (status == SF_IMAGE_CORRUPT
                && [SF_FORMAT_WEBP, SF_FORMAT_PNM, SF_FORMAT_JP2].contains(format))
    }

    /// Reads into `bytes` until it holds `target` bytes or the input ends; true at the end.
    /// - Throws: `tooLarge` past `limit` bytes, `unreadable` for a failed read.
    private func fill(_ bytes: EncodedBytes, from fd: Int32, until target: Int, limit: Int)
        throws(ImageError) -> Bool
    {
        while bytes.count < target {
            let count = bytes.read(from: fd, upTo: min(1 << 20, target - bytes.count))
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                throw ImageError(
                    code: .unreadable,
                    input: name,
                    message: "cannot be read",
                    cause: String(cString: strerror(errno))
                )
            }
            if count == 0 { return true }
            if bytes.count > limit {
                throw ImageError(
                    code: .tooLarge,
                    input: name,
                    message:
                        "holds more than \(limit) bytes, the limit for one input; not read further"
                )
            }
        }
        return false
    }
}
