public import Foundation
internal import Glibc

/// Where suites live on disk: one container directory per suite under a root.
///
/// The root is `SHOPFLOOR_HOME`, else `$XDG_DATA_HOME/shopfloor`, else
/// `~/.local/share/shopfloor`. Containers are created `0700`, files in them `0600`. A root
/// or container that another user could write (group- or world-writable, or owned by
/// another user), or that is not a directory, is refused with
/// ``ContainerError/Code/insecure``: whoever can write it could replace the suite's
/// settings or read its tokens.
public enum SuiteContainer {
    /// The suite used when none is named: `SHOPFLOOR_SUITE`, else `shopfloor`.
    public static func defaultSuiteName(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if let name = environment["SHOPFLOOR_SUITE"], !name.isEmpty { return name }
        return "shopfloor"
    }

    /// The root of all suite containers for this environment (not created).
    public static func rootURL(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        if let home = environment["SHOPFLOOR_HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home, isDirectory: true).standardizedFileURL
        }
        // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(fileURLWithPath: data, isDirectory: true).appendingPathComponent("shopfloor")
        }
        var home = environment["HOME"] ?? ""
        if home.isEmpty, let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir {
            home = String(cString: dir)
        }
        return URL(fileURLWithPath: home.isEmpty ? "/" : home, isDirectory: true)
            .appendingPathComponent(".local/share/shopfloor", isDirectory: true)
    }

    /// Checks that a suite name can name a directory safely: 1–200 characters from
    /// letters, digits, `.`, `_` and `-`, not starting with `.`.
    public static func validate(suiteName: String) throws(ContainerError) {
        let allowed = suiteName.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "_"
                    || scalar == "-")
        }
        guard !suiteName.isEmpty, suiteName.utf8.count <= 200, allowed, !suiteName.hasPrefix(".")
        else {
            throw ContainerError(
                code: .invalidSuiteName,
                message:
                    "invalid suite name '\(suiteName)': use 1-200 letters, digits, '.', '_' or '-', not starting with '.'"
            )
        }
    }

    /// The container directory of a suite, created (`0700`) and checked for safety.
    ///
    /// Other packages keep their own files here (Auth's token file, caches): create them
    /// `0600`, and not under the store's names (`defaults.*`).
    /// - Parameters:
    ///   - suite: the suite (app group) name.
    ///   - root: the containers' root; by default ``rootURL(environment:)``.
    /// - Throws: ``ContainerError`` with `invalidSuiteName`, `insecure` or `system`.
    public static func containerURL(forSuite suite: String, root: URL? = nil)
        throws(ContainerError)
        -> URL
    {
        try validate(suiteName: suite)
        let root = root ?? rootURL()
        try ensureDirectory(root.path, isRoot: true)
        let container = root.appendingPathComponent(suite, isDirectory: true)
        try ensureDirectory(container.path, isRoot: false)
        return container
    }

    /// Creates a directory (and missing parents) `0700`, then checks it is a directory owned
    /// by this user and not writable by group or others.
    static func ensureDirectory(_ path: String, isRoot: Bool) throws(ContainerError) {
        var info = stat()
        // The root may be reached through a symbolic link (a home on another disk); a suite
        // container may not, so a link cannot redirect one suite into another place.
        var result = isRoot ? stat(path, &info) : lstat(path, &info)
        if result != 0 && errno == ENOENT {
            if isRoot {
                try makeDirectories(path)
            } else if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw .system("cannot create the suite container", path: path)
            }
            result = isRoot ? stat(path, &info) : lstat(path, &info)
        }
        guard result == 0 else { throw .system("cannot inspect", path: path) }
        try checkOwnership(info, path: path, what: isRoot ? "container root" : "suite container")
    }

    static func checkOwnership(_ info: stat, path: String, what: String) throws(ContainerError) {
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ContainerError(
                code: .insecure,
                message: "\(what) \(path) is not a directory",
                path: path
            )
        }
        guard info.st_uid == geteuid() else {
            throw ContainerError(
                code: .insecure,
                message:
                    "\(what) \(path) is owned by uid \(info.st_uid), not by this user (uid \(geteuid()))",
                path: path
            )
        }
        guard info.st_mode & 0o022 == 0 else {
            throw ContainerError(
                code: .insecure,
                message:
                    "\(what) \(path) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); run chmod go-w on it",
                path: path
            )
        }
    }

    private static func makeDirectories(_ path: String) throws(ContainerError) {
        var prefix = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw .system("cannot create", path: prefix)
            }
        }
    }
}

/// Why a suite container could not be used.
public struct ContainerError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Hashable {
        /// The suite name is empty, too long, or has characters other than letters, digits,
        /// `.`, `_` and `-` (or starts with `.`).
        case invalidSuiteName
        /// The root or a container is writable by another user, owned by another user, or
        /// not a directory.
        case insecure
        /// A system call failed (the `errno` is kept).
        case system
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong, naming the path, for people.
    public var message: String
    /// The directory involved, when there is one.
    public var path: String?
    /// The `errno` of a failed system call, when there is one.
    public var errno: Int32?

    /// Creates an error.
    public init(code: Code, message: String, path: String? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
    }

    /// The message, with the system's text for `errno` when there is one.
    public var description: String {
        guard let errno else { return message }
        return "\(message): \(String(cString: strerror(errno)))"
    }

    static func system(_ what: String, path: String, errno: Int32 = Glibc.errno) -> ContainerError {
        ContainerError(code: .system, message: "\(what) \(path)", path: path, errno: errno)
    }
}
