// swift-tools-version: 6.1
// ImageCache: a memory + disk cache for images fetched over HTTP, shared by every suite tool
// (W-TinyLFU memory cache, multi-process disk cache with a hard byte limit, revalidation,
// offline stale serving, a coalescing download pipeline). Given a directory and a transport;
// links no C library; its POSIX loops and stop deferral
// are Plumbing's.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "ImageCache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ImageCache", targets: ["ImageCache"]),
        // A real second (third, ...) process for the multi-process disk cache tests.
        .executable(name: "ImageCacheStressTool", targets: ["ImageCacheStressTool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(path: "../Plumbing"),
        // The tests' child processes (swift-subprocess): a test dependency only.
        .package(path: "../ChildProcesses"),
        // Tests only: unsigned downloads through the suite's one URLSession bridge.
        .package(path: "../Auth"),
    ],
    targets: [
        .target(
            name: "ImageCache",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Plumbing", package: "Plumbing"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ImageCacheStressTool",
            dependencies: ["ImageCache", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ImageCacheTests",
            dependencies: [
                "ImageCache",
                // Started as second processes by the multi-process tests.
                "ImageCacheStressTool",
                .product(name: "ChildProcesses", package: "ChildProcesses"),
                .product(name: "Auth", package: "Auth"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Plumbing", package: "Plumbing"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
