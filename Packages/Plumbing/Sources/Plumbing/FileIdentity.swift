public import Glibc

/// A cheap change stamp of a file: device, inode, size, modification and change times. Any
/// write, replacement (rename over it), truncation or chmod gives a different stamp; one
/// `stat` to take. The suite's packages use it to tell whether a file they cached changed
/// (SharedStore's snapshot, Auth's credentials).
public struct FileIdentity: Sendable, Hashable {
    /// The device holding the file.
    public var device: UInt64
    /// The inode.
    public var inode: UInt64
    /// The size in bytes.
    public var size: Int64
    /// The modification time, in nanoseconds since 1970.
    public var modified: Int64
    /// The inode change time, in nanoseconds since 1970.
    public var changed: Int64

    /// The stamp of the file at `path` (links followed), or nil when it cannot be `stat`ed.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The stamp of an `fstat` or `stat` result.
    public init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec)
    }
}
