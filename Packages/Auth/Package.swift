// swift-tools-version: 6.1
// Auth: the suite's sign-in, token refresh and request signing (client), and the pieces the
// store-server uses to check them (signature verifier, password hasher, token issuer).
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// Auth is optimised in debug builds too: its signature parser, Base64 and signing run on
// every signed request of the suite's tests (AuthTests' 100,000-request flood, and every
// request to a test server), and unoptimised they were most of AuthTests' CPU (`perf`).
// make test-run on one built tree, one run after the other: AuthTests 61.6 s against 35.9 s
// optimised, the phase 188 s (312 CPU-s) against 173 s (293 CPU-s; 2 cores, 2026-12-07).
// Release builds are optimised anyway, and `-enable-testing` still comes with debug builds,
// so `@testable import` keeps working.
let debugOptimised: [SwiftSetting] =
    swiftSettings + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "Auth",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Auth", targets: ["Auth"]),
        // A second process for the cross-process refresh tests.
        .executable(name: "AuthPeer", targets: ["AuthPeer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(path: "../Plumbing"),
        // The tests' child processes (swift-subprocess): a test dependency only.
        .package(path: "../ChildProcesses"),
        // Tests only: the small test server on real sockets (plain Hummingbird; the port is
        // learned from onServerRunning, so HummingbirdTesting and its HTTP client stay out).
        .package(
            url: "https://github.com/hummingbird-project/hummingbird",
            from: "2.28.1",
            traits: []
        ),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Tests only: the reference RFC 8941 parser the hand parser is fuzzed against.
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
    ],
    targets: [
        .target(
            name: "Auth",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Plumbing", package: "Plumbing"),
            ],
            swiftSettings: debugOptimised
        ),
        .executableTarget(
            name: "AuthPeer",
            dependencies: ["Auth", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AuthTests",
            dependencies: [
                "Auth",
                // Started as a second process by the cross-process tests.
                "AuthPeer",
                .product(name: "ChildProcesses", package: "ChildProcesses"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(
                    name: "RawStructuredFieldValues",
                    package: "swift-http-structured-headers"
                ),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
