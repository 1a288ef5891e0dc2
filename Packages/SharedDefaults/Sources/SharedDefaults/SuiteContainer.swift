public import Foundation
internal import Glibc

/// Where suites live on disk: one container directory per suite under a root.
///
/// The root is `SHOPFLOOR_HOME`, else `$XDG_DATA_HOME/shopfloor`, else
/// `~/.local/share/shopfloor`. Containers are created `0700`, files in them `0600`. A root
/// or container that another user could write (group- or world-writable, or owned by
/// another user), or that is not a directory, is refused with
/// ``SharedStoreError/Code/insecureContainer``: whoever can write it could replace the
/// suite's settings or read its tokens.
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
    public static func validate(suiteName: String) throws(SharedStoreError) {
        let allowed = suiteName.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "_"
                    || scalar == "-")
        }
        guard !suiteName.isEmpty, suiteName.utf8.count <= 200, allowed, !suiteName.hasPrefix(".")
        else {
            throw SharedStoreError(
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
    /// - Throws: ``SharedStoreError`` with `invalidSuiteName`, `insecureContainer` or
    ///   `ioFailure`.
    public static func containerURL(forSuite suite: String, root: URL? = nil)
        throws(SharedStoreError)
        -> URL
    {
        try validate(suiteName: suite)
        let root = root ?? rootURL()
        try ensureDirectory(root.path, isRoot: true)
        let container = root.appendingPathComponent(suite, isDirectory: true)
        try ensureDirectory(container.path, isRoot: false)
        return container
    }

    /// The suites under a root that hold a defaults store, sorted by name.
    public static func suitesWithStores(root: URL? = nil) throws(SharedStoreError) -> [String] {
        let root = root ?? rootURL()
        guard let dir = opendir(root.path) else {
            if errno == ENOENT { return [] }
            throw .system("cannot list", path: root.path)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            guard (try? validate(suiteName: name)) != nil else { continue }
            var info = stat()
            let store = root.appendingPathComponent(name).appendingPathComponent(
                StoreFiles.storeName
            )
            if lstat(store.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                names.append(name)
            }
        }
        return names.sorted()
    }

    /// Creates a directory (and missing parents) `0700`, then checks it is a directory owned
    /// by this user and not writable by group or others.
    static func ensureDirectory(_ path: String, isRoot: Bool) throws(SharedStoreError) {
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

    static func checkOwnership(_ info: stat, path: String, what: String) throws(SharedStoreError) {
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw SharedStoreError(
                code: .insecureContainer,
                message: "\(what) \(path) is not a directory",
                path: path
            )
        }
        guard info.st_uid == geteuid() else {
            throw SharedStoreError(
                code: .insecureContainer,
                message:
                    "\(what) \(path) is owned by uid \(info.st_uid), not by this user (uid \(geteuid()))",
                path: path
            )
        }
        guard info.st_mode & 0o022 == 0 else {
            throw SharedStoreError(
                code: .insecureContainer,
                message:
                    "\(what) \(path) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); run chmod go-w on it",
                path: path
            )
        }
    }

    private static func makeDirectories(_ path: String) throws(SharedStoreError) {
        var prefix = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw .system("cannot create", path: prefix)
            }
        }
    }
}
