// swift-tools-version: 6.1
// PNG: the suite's one libpng module (CPNG) and a small Swift API over libpng's simplified
// interface: decoding any PNG to 8-bit RGBA and encoding 8-bit grey, RGB or RGBA pixels.
// Scanner's image decoders, the server's demo images and the clients' product images all
// use it; it links libpng and nothing else.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "PNG",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PNG", targets: ["PNG"]),
        // For C code that includes <png.h> itself (Scanner's decoders).
        .library(name: "CPNG", targets: ["CPNG"]),
    ],
    dependencies: [
        // The tests' child processes (swift-subprocess): a test dependency only.
        .package(path: "../ChildProcesses")
    ],
    targets: [
        // No pkgConfig on purpose: libpng16.pc's `-L/usr/lib/<triple>` would land on every
        // app's link line ahead of CCurlLoader's linker script (root Package.swift), so the
        // apps that show images would load libcurl at start again. <png.h> is found in the
        // default include path (Debian's libpng-dev links /usr/include/png.h).
        .systemLibrary(name: "CPNG"),
        .target(name: "PNG", dependencies: ["CPNG"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PNGTests",
            dependencies: ["PNG", .product(name: "ChildProcesses", package: "ChildProcesses")],
            swiftSettings: swiftSettings
        ),
    ]
)
