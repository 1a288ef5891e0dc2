// swift-tools-version: 6.1
// ChildProcesses: the tests' one way to run a child process (the suite's apps, a relay, a
// database tool), built on swift-subprocess: nothing waits on a thread, so hundreds of child
// processes of a test run share Swift's concurrency pool without blocking it. Only test
// targets depend on it; no shipped product compiles it.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "ChildProcesses",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ChildProcesses", targets: ["ChildProcesses"])
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        .target(
            name: "ChildProcesses",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChildProcessesTests",
            dependencies: ["ChildProcesses"],
            swiftSettings: swiftSettings
        ),
    ]
)
