// swift-tools-version: 6.1
// The root package: the suite's thin command-line apps and the integration tests that run
// across packages. Each capability lives in its own package under Packages/.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Shopfloor",
    platforms: [.macOS(.v15)],
    products: [
        // The suite's apps; later parts add reservations, catalog and store-server.
        .executable(name: "suite-defaults", targets: ["suite-defaults"]),
        .executable(name: "scan", targets: ["scan"]),
    ],
    dependencies: [
        .package(path: "Packages/Models"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The capability packages the apps are thin layers over.
        .package(path: "Packages/SharedDefaults"),
        .package(path: "Packages/Scanner"),
    ],
    targets: [
        // Process start-up before any Swift code: standard descriptors, stop signals.
        .target(name: "CStartup", path: "Apps/CStartup"),
        // Shared by every app: the entry point, stop signals, checked stdout and stderr,
        // log lines, suite version, exit codes, common flags, the JSON list page.
        .target(
            name: "CommandSupport",
            dependencies: [
                "CStartup",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SharedDefaults", package: "SharedDefaults"),
            ],
            path: "Apps/CommandSupport",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "suite-defaults",
            dependencies: [
                "CommandSupport",
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
                .product(name: "Scanner", package: "Scanner"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Apps/scan",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "CommandSupport",
                .product(name: "Models", package: "Models"),
                .product(name: "Scanner", package: "Scanner"),
                .product(name: "SharedDefaults", package: "SharedDefaults"),
            ],
            path: "Tests/IntegrationTests",
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
    ]
)
