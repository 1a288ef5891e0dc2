import CommandSupport
import Foundation
import Scanner

/// `--annotate DIR`: a picture per input (per frame of a multi-frame image) of what was read,
/// `DIR/<name>.annotated.png`. Names are decided before the scan, in input order, so
/// parallel jobs never write the same file: inputs with the same file name get `-2`, `-3`, ...;
/// stdin is `stdin`; frames after the first of a TIFF or GIF add `-frame<N>`.
struct AnnotationOutput: Sendable {
    let directory: URL
    /// The picture's base name of each input, by its index in the batch.
    let names: [String]

    /// Creates `path` (and its parents) when missing and names each input's picture.
    /// - Throws: a message naming the directory and the reason when it cannot be made or is
    ///   not a directory.
    static func prepare(_ path: String, inputs: [ScanInput]) throws(AnnotationSetupError)
        -> AnnotationOutput
    {
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        if let reason = makeDirectories(path) {
            throw AnnotationSetupError(
                message:
                    "\(TerminalText.escaped(path)): cannot make the --annotate directory (\(reason))"
            )
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw AnnotationSetupError(
                message:
                    "\(TerminalText.escaped(path)): the --annotate directory is not writable (\(String(cString: strerror(errno))))"
            )
        }
        var used = Set<String>()
        var names: [String] = []
        for input in inputs {
            let stem = Self.stem(of: input.name)
            var name = stem
            var n = 2
            while !used.insert(name).inserted {
                name = "\(stem)-\(n)"
                n += 1
            }
            names.append(name)
        }
        return AnnotationOutput(directory: directory, names: names)
    }

    /// The file for input `index` (and `frame` of a multi-frame image).
    func url(input index: Int, frame: Int?) -> URL {
        let suffix = frame.map { $0 > 0 ? "-frame\($0)" : "" } ?? ""
        return directory.appendingPathComponent("\(names[index])\(suffix).annotated.png")
    }

    /// Draws and writes the picture of one frame; the error's description when that fails.
    func write(
        _ image: ImageBuffer,
        record: ScanRecord,
        input index: Int,
        frame: Int?
    ) -> String? {
        let url = url(input: index, frame: frame)
        guard
            let rendered = Annotation.render(image, symbols: record.symbols, text: record.text)
        else {
            return "\(url.path): no memory to draw the annotated picture"
        }
        do throws(ImageError) {
            try rendered.image.writePNG(to: url)
            return nil
        } catch {
            return error.description
        }
    }

    /// The input's file name without its extension, safe as a file name: `stdin` for `-`.
    static func stem(of name: String) -> String {
        if name == "-" { return "stdin" }
        var last = (name as NSString).lastPathComponent
        let ext = (last as NSString).pathExtension
        if !ext.isEmpty, last.count > ext.count + 1 { last = String(last.dropLast(ext.count + 1)) }
        let safe = String(
            last.unicodeScalars.map { s -> Character in
                s == "/" || s.value < 32 || s.value == 127 || s == "\u{FFFD}" ? "_" : Character(s)
            }
        )
        return safe.isEmpty || safe == "." || safe == ".." ? "image" : safe
    }

    /// `mkdir -p`: nil when `path` is (now) a directory, else the system's reason.
    private static func makeDirectories(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o777) != 0 {
                let code = errno
                var info = stat()
                guard code == EEXIST, stat(prefix, &info) == 0 else {
                    return String(cString: strerror(code))
                }
                if info.st_mode & S_IFMT != S_IFDIR {
                    return "\(TerminalText.escaped(prefix)) is not a directory"
                }
            }
            prefix += "/"
        }
        return nil
    }
}

/// `--annotate DIR` could not be used.
struct AnnotationSetupError: Error {
    var message: String
}
