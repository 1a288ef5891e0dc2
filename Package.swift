// swift-tools-version: 6.1
// The root package: the suite's thin command-line apps (Apps/), the libraries they share
// (Sources/: the server library StoreServer, the client library SuiteClient and the command
// helpers), and the integration tests (Tests/). Each capability lives in its own package
// under Packages/.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The directory of CCurlLoader's `libcurl.so` linker script (`AS_NEEDED`), searched before
/// the system's by the apps that link FoundationNetworking, so libcurl is loaded on the first
/// https request instead of at every start (Sources/CCurlLoader/curl_loader.c).
let curlLoaderLinkDirectory =
    String(#filePath.dropLast("Package.swift".count)) + "Sources/CCurlLoader/link"
let loadsCurlOnFirstUse: [LinkerSetting] = [.unsafeFlags(["-L", curlLoaderLinkDirectory])]

let package = Package(
    name: "Shopfloor",
    platforms: [.macOS(.v15)],
    products: [
        // The suite's apps, and nothing else: `make build` builds these products only.
        .executable(name: "suite-defaults", targets: ["suite-defaults"]),
        .executable(name: "scan", targets: ["scan"]),
        .executable(name: "store-server", targets: ["store-server"]),
        .executable(name: "reservations", targets: ["reservations"]),
        .executable(name: "catalog", targets: ["catalog"]),
    ],
    dependencies: [
        .package(path: "Packages/Models"),
        .package(path: "Packages/Plumbing"),
        .package(path: "Packages/PNG"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // The capability packages the apps are thin layers over.
        .package(path: "Packages/SharedDefaults"),
        .package(path: "Packages/Scanner"),
        .package(path: "Packages/Auth"),
        .package(path: "Packages/ImageCache"),
        // The tests' child-process runner (swift-subprocess); only test targets use it.
        .package(path: "Packages/ChildProcesses"),
        // store-server: HTTP, SQL on SQLite and PostgreSQL, metrics.
        // No default traits: swift-configuration and full Foundation are not used. Every
        // manifest that names Hummingbird says `traits: []`, or SwiftPM turns them back on.
        .package(
            url: "https://github.com/hummingbird-project/hummingbird",
            from: "2.28.1",
            traits: []
        ),
        .package(url: "https://github.com/vapor/sql-kit", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit", from: "2.17.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Process start-up before any Swift code: standard descriptors, stop signals.
        .target(name: "CStartup", path: "Sources/CStartup"),
        // libcurl loaded on the first https request, not at start (see curl_loader.c).
        .target(
            name: "CCurlLoader",
            path: "Sources/CCurlLoader",
            exclude: ["link"],
            linkerSettings: loadsCurlOnFirstUse
        ),
        // Shared by every app: the entry point, stop signals, checked stdout and stderr,
        // log lines, suite version, exit codes, common flags, JSON output.
        .target(
            name: "CommandSupport",
            dependencies: [
                "CStartup",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Models", package: "Models"),
                .product(name: "Plumbing", package: "Plumbing"),
            ],
            path: "Sources/CommandSupport",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "suite-defaults",
            dependencies: [
                "CommandSupport",
                .product(name: "Models", package: "Models"),
                .product(name: "Plumbing", package: "Plumbing"),
                .product(name: "SharedDefaults", package: "SharedDefaults"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Apps/suite-defaults",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "scan",
            dependencies: [
                "CommandSupport",
                .product(name: "Models", package: "Models"),
                .product(name: "Scanner", package: "Scanner"),
                .product(name: "Plumbing", package: "Plumbing"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Apps/scan",
            swiftSettings: swiftSettings
        ),
        // The suite's client for store-server, shared by reservations and catalog: server URL,
        // signed requests, client configuration, forced update, offline cache, timeouts.
        .target(
            name: "SuiteClient",
            dependencies: [
                .product(name: "Models", package: "Models"),
                .product(name: "Auth", package: "Auth"),
                .product(name: "ImageCache", package: "ImageCache"),
                .product(name: "Plumbing", package: "Plumbing"),
                .product(name: "SharedDefaults", package: "SharedDefaults"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/SuiteClient",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // What the client apps (reservations, catalog) share: their server options, output,
        // prompts and the login, logout and whoami commands, named after each app.
        .target(
            name: "ClientCommands",
            dependencies: [
                "CommandSupport",
                "SuiteClient",
                .product(name: "Models", package: "Models"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/ClientCommands",
            swiftSettings: swiftSettings
        ),
        // Scanner stays off reservations' start path: `show --from-image` runs `scan`.
        .executableTarget(
            name: "reservations",
            dependencies: [
                "CCurlLoader",
                "ClientCommands",
                "CommandSupport",
                "SuiteClient",
                .product(name: "Models", package: "Models"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Apps/reservations",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // Product images for client apps: the shared image cache in the suite container on
        // SuiteClient's signed requests, PNG decoding (libpng only) and terminal drawing.
        .target(
            name: "ProductImages",
            dependencies: [
                "SuiteClient",
                .product(name: "ImageCache", package: "ImageCache"),
                .product(name: "Models", package: "Models"),
                .product(name: "PNG", package: "PNG"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/ProductImages",
            swiftSettings: swiftSettings
        ),
        // Scanner stays off catalog's start path too: `lookup --from-image` runs `scan`.
        .executableTarget(
            name: "catalog",
            dependencies: [
                "CCurlLoader",
                "ClientCommands",
                "CommandSupport",
                "SuiteClient",
                "ProductImages",
                .product(name: "ImageCache", package: "ImageCache"),
                .product(name: "Models", package: "Models"),
                .product(name: "PNG", package: "PNG"),
                .product(name: "Plumbing", package: "Plumbing"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Apps/catalog",
            swiftSettings: swiftSettings
        ),
        // store-server's OpenAPI document compiled into the binary (C23 #embed of
        // Sources/StoreServer/openapi.yaml): an installed binary has no resource bundle.
        .target(name: "COpenAPIDocument", path: "Sources/COpenAPIDocument"),
        // The store server as a library: routes, persistence, migrations, demo data, admin.
        .target(
            name: "StoreServer",
            dependencies: [
                "COpenAPIDocument",
                .product(name: "Models", package: "Models"),
                .product(name: "PNG", package: "PNG"),
                .product(name: "Auth", package: "Auth"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Plumbing", package: "Plumbing"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/StoreServer",
            exclude: ["openapi.yaml"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "store-server",
            dependencies: [
                "CCurlLoader",
                "CommandSupport",
                "StoreServer",
                .product(name: "Models", package: "Models"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Apps/store-server",
            swiftSettings: swiftSettings
        ),
        // Peers the root test targets play (listeners on loopback); never in a shipped build.
        .target(
            name: "TestSupport",
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StoreServerTests",
            dependencies: [
                "CommandSupport",
                "StoreServer",
                "TestSupport",
                .product(name: "Models", package: "Models"),
                .product(name: "Auth", package: "Auth"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // Built for the cross-process refresh test (a second client process).
                .product(name: "AuthPeer", package: "Auth"),
                .product(name: "ChildProcesses", package: "ChildProcesses"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/StoreServerTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SuiteClientTests",
            dependencies: [
                "SuiteClient",
                "TestSupport",
                .product(name: "Models", package: "Models"),
                .product(name: "Auth", package: "Auth"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/SuiteClientTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ProductImagesTests",
            dependencies: [
                "ProductImages",
                "SuiteClient",
                .product(name: "ImageCache", package: "ImageCache"),
                .product(name: "Models", package: "Models"),
                .product(name: "PNG", package: "PNG"),
            ],
            path: "Tests/ProductImagesTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "CommandSupport",
                "SuiteClient",
                "ProductImages",
                "TestSupport",
                .product(name: "ChildProcesses", package: "ChildProcesses"),
                .product(name: "ImageCache", package: "ImageCache"),
                .product(name: "Models", package: "Models"),
                .product(name: "PNG", package: "PNG"),
                .product(name: "Scanner", package: "Scanner"),
                .product(name: "SharedDefaults", package: "SharedDefaults"),
            ],
            path: "Tests/IntegrationTests",
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
    ]
)

// The capability packages' own tests, in this one build graph: `make test` builds once here, so
// swift-log, swift-crypto, SwiftNIO and the rest build once, not once per package, then runs
// each package's tests in its own process (`swift test --skip-build --filter '^AuthTests\.'`).
// Each target keeps its package's name and directory, so `swift test --package-path
// Packages/X` still runs the same files on their own. The executables a test starts as a
// second process are listed as dependencies so they are built beside the test bundle.
package.dependencies += [
    // AuthTests: HMAC keys, the test server's service group, the reference RFC 8941 parser.
    .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
]
package.targets += [
    .testTarget(
        name: "ModelsTests",
        dependencies: [.product(name: "Models", package: "Models")],
        path: "Packages/Models/Tests/ModelsTests",
        resources: [.copy("Resources")],
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "PlumbingTests",
        dependencies: [.product(name: "Plumbing", package: "Plumbing")],
        path: "Packages/Plumbing/Tests/PlumbingTests",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "PNGTests",
        dependencies: [
            .product(name: "ChildProcesses", package: "ChildProcesses"),
            .product(name: "PNG", package: "PNG"),
        ],
        path: "Packages/PNG/Tests/PNGTests",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "ChildProcessesTests",
        dependencies: [.product(name: "ChildProcesses", package: "ChildProcesses")],
        path: "Packages/ChildProcesses/Tests/ChildProcessesTests",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "SharedDefaultsTests",
        dependencies: [
            .product(name: "ChildProcesses", package: "ChildProcesses"),
            .product(name: "Plumbing", package: "Plumbing"),
            .product(name: "SharedDefaults", package: "SharedDefaults"),
            .product(name: "SharedDefaultsStressTool", package: "SharedDefaults"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "Logging", package: "swift-log"),
        ],
        path: "Packages/SharedDefaults/Tests/SharedDefaultsTests",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "AuthTests",
        dependencies: [
            .product(name: "Auth", package: "Auth"),
            .product(name: "AuthPeer", package: "Auth"),
            .product(name: "ChildProcesses", package: "ChildProcesses"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
        ],
        path: "Packages/Auth/Tests/AuthTests",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "ImageCacheTests",
        dependencies: [
            .product(name: "ChildProcesses", package: "ChildProcesses"),
            .product(name: "ImageCache", package: "ImageCache"),
            .product(name: "Auth", package: "Auth"),
            .product(name: "Plumbing", package: "Plumbing"),
            .product(name: "ImageCacheStressTool", package: "ImageCache"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "Logging", package: "swift-log"),
        ],
        path: "Packages/ImageCache/Tests/ImageCacheTests",
        swiftSettings: swiftSettings
    ),
    .testTarget(
        name: "ScannerTests",
        // The umbrella, the targets whose internals the OCR and small-symbol tests see, and
        // swift-log's in-memory handler for the region search's log.
        dependencies: [
            .product(name: "Scanner", package: "Scanner"),
            .product(name: "ScannerBarcodes", package: "Scanner"),
            .product(name: "ScannerImages", package: "Scanner"),
            .product(name: "ScannerText", package: "Scanner"),
            .product(name: "InMemoryLogging", package: "swift-log"),
        ],
        path: "Packages/Scanner/Tests/ScannerTests",
        swiftSettings: swiftSettings
    ),
]
