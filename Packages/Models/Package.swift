// swift-tools-version: 6.1
// Models: the suite's value types and their stable JSON. Depends on Foundation only.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Models",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Models", targets: ["Models"])
    ],
    targets: [
        .target(name: "Models", swiftSettings: swiftSettings),
        .testTarget(
            name: "ModelsTests",
            dependencies: ["Models"],
            resources: [.copy("Resources")],
            swiftSettings: swiftSettings
        ),
    ]
)
