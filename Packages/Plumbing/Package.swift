// swift-tools-version: 6.1
// Plumbing: the suite's file and process plumbing, shared by every package and app: atomic
// file replacement and whole-buffer I/O loops, the suite containers, job-control stop
// deferral around short file locks. Foundation and Glibc only.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Plumbing",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Plumbing", targets: ["Plumbing"])
    ],
    targets: [
        .target(name: "Plumbing", swiftSettings: swiftSettings),
        .testTarget(
            name: "PlumbingTests",
            dependencies: ["Plumbing"],
            swiftSettings: swiftSettings
        ),
    ]
)
