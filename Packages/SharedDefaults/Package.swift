// swift-tools-version: 6.1
// SharedDefaults: a file-backed app-group store that every Shopfloor tool shares safely across
// processes (atomic read-modify-write, durable commits, inotify change observation).
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "SharedDefaults",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SharedDefaults", targets: ["SharedDefaults"]),
        // Used by the tests (and the benchmark comparison) as a real second process.
        .executable(name: "SharedDefaultsStressTool", targets: ["SharedDefaultsStressTool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(path: "../Plumbing"),
        // The tests' child processes (swift-subprocess): a test dependency only.
        .package(path: "../ChildProcesses"),
    ],
    targets: [
        .target(
            name: "SharedDefaults",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Plumbing", package: "Plumbing"),
            ],
            // Encoding, decoding and checksumming a store are loops that run 20-50 times
            // slower unoptimized; the multi-process tests commit thousands of times, so the
            // library is optimized in debug builds too (it is a local package, so SwiftPM
            // accepts the flag).
            swiftSettings: swiftSettings + [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        .executableTarget(
            name: "SharedDefaultsStressTool",
            dependencies: ["SharedDefaults", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SharedDefaultsTests",
            dependencies: [
                "SharedDefaults",
                // Started as second processes by the multi-process tests.
                "SharedDefaultsStressTool",
                .product(name: "ChildProcesses", package: "ChildProcesses"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Plumbing", package: "Plumbing"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
