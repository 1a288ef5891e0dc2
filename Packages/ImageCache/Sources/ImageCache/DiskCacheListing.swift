internal import Foundation
internal import Plumbing

extension DiskCache {
    /// One entry found by ``entries(keyPrefix:limit:)``.
    public struct Listed: Sendable {
        /// The entry's key.
        public var key: CacheKey
        /// Its metadata and body.
        public var entry: Entry
    }

    /// Every readable entry whose key starts with `keyPrefix`, at most `limit`, in no
    /// particular order: a scan of the whole folder (each entry file's header is read), for
    /// the rare search over what is kept, such as an offline search. Damaged entries are
    /// skipped (and removed when their key can be read); non-regular files are skipped.
    public func entries(keyPrefix: String, limit: Int = 10_000) -> [Listed] {
        var found: [Listed] = []
        let prefix = Array(keyPrefix.utf8)
        for name in CacheFolder.entryFolders {
            for file in folder.names(in: name) where file.utf8.count == 32 {
                guard found.count < limit else { return found }
                let relative = name + "/" + file
                let fd = POSIX.openAt(
                    folder.fd,
                    relative,
                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
                )
                guard fd >= 0 else { continue }
                defer { close(fd) }
                var info = stat()
                guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                    Int(info.st_size) <= sizeLimit,
                    let keyText = EntryFile.key(fd, size: Int(info.st_size), prefix: prefix)
                else { continue }
                let key = CacheKey(keyText)
                // A file under another key's name is not that key's entry.
                guard key.relativePath == relative else { continue }
                switch EntryFile.read(fd, size: Int(info.st_size), key: key) {
                case .entry(let metadata, let body):
                    found.append(Listed(key: key, entry: Entry(metadata: metadata, body: body)))
                case .corrupt(let reason):
                    let identity = FileIdentity(
                        device: UInt64(info.st_dev),
                        inode: UInt64(info.st_ino)
                    )
                    removeDamaged(key, identity: identity, reason: reason)
                case .otherKey, .failed:
                    continue
                }
            }
        }
        return found
    }
}

extension EntryFile {
    /// The key stored in the entry file `fd` when it starts with `prefix` (nil otherwise, or
    /// when the header cannot be read). The header's checksum is checked by ``read``.
    static func key(_ fd: Int32, size: Int, prefix: [UInt8]) -> String? {
        guard size >= headerSize else { return nil }
        var head = [UInt8](repeating: 0, count: min(size, firstReadSize))
        let count = head.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
        guard count == head.count else { return nil }
        let (magic, keyLength) = head.withUnsafeBytes { raw in
            (raw.load32(at: 0), Int(raw.load32(at: 8)))
        }
        guard magic == Self.magic, keyLength >= prefix.count, headerSize + keyLength <= size
        else { return nil }
        if headerSize + keyLength > head.count {
            head = [UInt8](repeating: 0, count: headerSize + keyLength)
            let again = head.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
            guard again == head.count else { return nil }
        }
        let keyBytes = head[headerSize..<(headerSize + keyLength)]
        guard keyBytes.starts(with: prefix) else { return nil }
        return String(validating: keyBytes, as: UTF8.self)
    }
}
