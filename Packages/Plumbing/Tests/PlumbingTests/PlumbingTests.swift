import Foundation
import Plumbing
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory under the system's temporary directory (0700), removed on deinit.
final class TemporaryDirectory {
    let url: URL
    var path: String { url.path }

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("plumbing-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, 0o700)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

func mode(of path: String) -> Int {
    var info = stat()
    guard lstat(path, &info) == 0 else { return -1 }
    return Int(info.st_mode & 0o7777)
}

@Suite("Suite containers")
struct SuiteContainerTests {
    @Test(
        "the root comes from SHOPFLOOR_HOME, then XDG_DATA_HOME, then HOME",
        arguments: [
            (["SHOPFLOOR_HOME": "/srv/sf", "XDG_DATA_HOME": "/x", "HOME": "/h"], "/srv/sf"),
            (["XDG_DATA_HOME": "/x", "HOME": "/h"], "/x/shopfloor"),
            (["XDG_DATA_HOME": "relative", "HOME": "/h"], "/h/.local/share/shopfloor"),
            (["SHOPFLOOR_HOME": "", "HOME": "/h"], "/h/.local/share/shopfloor"),
        ]
    )
    func rootResolution(environment: [String: String], expected: String) {
        #expect(SuiteContainer.rootURL(environment: environment).path == expected)
    }

    @Test("the suite name comes from SHOPFLOOR_SUITE, else shopfloor")
    func defaultSuite() {
        #expect(
            SuiteContainer.defaultSuiteName(environment: ["SHOPFLOOR_SUITE": "store-12"])
                == "store-12"
        )
        #expect(SuiteContainer.defaultSuiteName(environment: [:]) == "shopfloor")
    }

    @Test("a new root is created 0700 with its missing parents")
    func createsRoot() throws {
        let root = try TemporaryDirectory()
        let nested = root.url.appendingPathComponent("a/b/shopfloor")
        let container = try SuiteContainer.containerURL(forSuite: "x", root: nested)
        #expect(mode(of: nested.path) == 0o700)
        #expect(container.path == nested.appendingPathComponent("x").path)
    }

    @Test(
        "unsafe suite names are refused before anything is created",
        arguments: ["", ".x", "a/b", "../x"]
    )
    func invalidNames(name: String) throws {
        let root = try TemporaryDirectory()
        let error = #expect(throws: ContainerError.self) {
            try SuiteContainer.containerURL(forSuite: name, root: root.url)
        }
        #expect(error?.code == .invalidSuiteName)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).isEmpty)
    }

    @Test("a container writable by others is refused, naming it")
    func writableByOthers() throws {
        let root = try TemporaryDirectory()
        let container = try SuiteContainer.containerURL(forSuite: "s", root: root.url)
        chmod(container.path, 0o777)
        let error = #expect(throws: ContainerError.self) {
            try SuiteContainer.containerURL(forSuite: "s", root: root.url)
        }
        #expect(error?.code == .insecure)
        #expect(error?.path == container.path)
    }
}

@Suite("The suite's one file writer")
struct FileIOTests {
    @Test("FileIO's permissions are exact whatever the umask; without, a file keeps its own")
    func fileReplacementPermissions() throws {
        let root = try TemporaryDirectory()
        let file = root.url.appendingPathComponent("credentials")
        func mode() -> mode_t {
            var info = stat()
            _ = stat(file.path, &info)
            return info.st_mode & 0o7777
        }
        let saved = umask(0)
        defer { umask(saved) }
        try FileIO.replaceFile(atPath: file.path, with: Data("one".utf8), permissions: 0o600)
        #expect(mode() == 0o600)
        #expect(chmod(file.path, 0o644) == 0)
        // An existing file's permissions are kept unless new ones are given.
        try FileIO.replaceFile(atPath: file.path, with: Array("two".utf8))
        #expect(mode() == 0o644)
        try FileIO.replaceFile(atPath: file.path, with: Data("three".utf8), permissions: 0o600)
        #expect(mode() == 0o600)
        #expect(try String(contentsOf: file, encoding: .utf8) == "three")
        // Not durable: replaced all the same, and no temporary file is left behind.
        try FileIO.replaceFile(atPath: file.path, with: Data("four".utf8), durable: false)
        #expect(try String(contentsOf: file, encoding: .utf8) == "four")
        #expect(mode() == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["credentials"])
    }

    @Test("FileIO replaces a file atomically through links and refuses special files")
    func fileReplacement() throws {
        let root = try TemporaryDirectory()
        let file = root.url.appendingPathComponent("out.txt")
        try FileIO.replaceFile(atPath: file.path, with: Array("one".utf8))
        #expect(try String(contentsOf: file, encoding: .utf8) == "one")
        let link = root.url.appendingPathComponent("link.txt")
        #expect(symlink("out.txt", link.path) == 0)
        try FileIO.replaceFile(atPath: link.path, with: Array("two".utf8))
        #expect(try String(contentsOf: file, encoding: .utf8) == "two")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "out.txt")
        let fifo = root.url.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for path in [fifo.path, root.path, "/dev/null"] {
            #expect { try FileIO.replaceFile(atPath: path, with: [1]) } throws: {
                ($0 as? FileIOError)?.code == .notRegularFile
            }
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == [
                "fifo", "link.txt", "out.txt",
            ]
        )
        // Reading stops at its limit.
        #expect { try FileIO.readFile(atPath: file.path, limit: 2) } throws: {
            ($0 as? FileIOError)?.code == .tooLarge
        }
        #expect(try FileIO.readFile(atPath: file.path, limit: 3) == Array("two".utf8))
    }
}
