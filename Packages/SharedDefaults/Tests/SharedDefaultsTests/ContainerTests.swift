import Foundation
import Plumbing
import SharedDefaults
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Suite containers and permissions")
struct ContainerTests {
    @Test(
        "unsafe suite names are refused",
        arguments: [
            "", ".", "..", ".hidden", "a/b", "../x", "tab\tname", "ünï",
            String(repeating: "a", count: 201),
        ]
    )
    func invalidNames(name: String) throws {
        let root = try TemporaryRoot()
        let error = #expect(throws: SharedStoreError.self) { try root.store(name) }
        #expect(error?.code == .invalidSuiteName)
    }

    @Test("containers are created 0700 and store files 0600")
    func createdModes() throws {
        let root = try TemporaryRoot()
        let old = umask(0)
        defer { umask(old) }
        let store = try root.store("modes")
        try store.set(1, forKey: "a")
        try store.set(2, forKey: "a")
        #expect(try mode(of: store.containerURL.path) == 0o700)
        for name in try root.files(in: "modes") {
            #expect(
                try mode(of: store.containerURL.appendingPathComponent(name).path) == 0o600,
                "\(name)"
            )
        }
        #expect(
            try root.files(in: "modes") == [
                "defaults.lock", "defaults.store", "defaults.store.bak",
            ]
        )
    }

    @Test(
        "a container or root writable by group or others is refused",
        arguments: [0o770, 0o702, 0o777, 0o720]
    )
    func writableByOthers(permissions: Int) throws {
        let root = try TemporaryRoot()
        _ = try SuiteContainer.containerURL(forSuite: "s", root: root.url)
        chmod(root.url.appendingPathComponent("s").path, mode_t(permissions))
        let container = #expect(throws: SharedStoreError.self) { try root.store("s") }
        #expect(container?.code == .insecureContainer)
        #expect(container?.message.contains("writable by group or others") == true)

        chmod(root.url.appendingPathComponent("s").path, 0o700)
        chmod(root.path, mode_t(permissions))
        let rootError = #expect(throws: SharedStoreError.self) { try root.store("s") }
        #expect(rootError?.code == .insecureContainer)
        chmod(root.path, 0o700)
        #expect(throws: Never.self) { try root.store("s") }
    }

    @Test(
        "a container owned by another user is refused",
        .enabled(if: geteuid() == 0, "chown needs root")
    )
    func ownedByAnotherUser() throws {
        let root = try TemporaryRoot()
        let container = try SuiteContainer.containerURL(forSuite: "s", root: root.url)
        chown(container.path, 4321, 4321)
        let error = #expect(throws: SharedStoreError.self) { try root.store("s") }
        #expect(error?.code == .insecureContainer)
        #expect(error?.message.contains("owned by uid 4321") == true)
    }

    @Test("a symbolic link in place of a suite container is refused")
    func containerSymlink() throws {
        let root = try TemporaryRoot()
        let elsewhere = try TemporaryRoot()
        symlink(elsewhere.path, root.url.appendingPathComponent("s").path)
        let error = #expect(throws: SharedStoreError.self) { try root.store("s") }
        #expect(error?.code == .insecureContainer)
    }

    @Test("domains lists only suites that hold a store")
    func suitesWithStores() throws {
        let root = try TemporaryRoot()
        try root.store("b").set(1, forKey: "k")
        try root.store("a").set(1, forKey: "k")
        _ = try SuiteContainer.containerURL(forSuite: "tokens-only", root: root.url)
        #expect(try SuiteContainer.suitesWithStores(root: root.url) == ["a", "b"])
        #expect(
            try SuiteContainer.suitesWithStores(root: root.url.appendingPathComponent("none")) == []
        )
    }

    func mode(of path: String) throws -> Int {
        var info = stat()
        try #require(lstat(path, &info) == 0)
        return Int(info.st_mode & 0o7777)
    }
}
