public import Foundation
internal import Glibc
public import Plumbing

extension SuiteContainer {
    /// The suites under a root that hold a defaults store, sorted by name.
    /// - Throws: ``SharedStoreError`` with `ioFailure` when the root cannot be listed.
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
}
