// swift-tools-version: 6.1
// Scanner: barcodes (libzbar and ZXing-C++) and text (Tesseract) from images decoded through
// libpng, libjpeg, libtiff, giflib and leptonica. Targets: ScannerImages, ScannerBarcodes,
// ScannerText, and Scanner, the umbrella that re-exports them. System C libraries through
// pkg-config; ZXing-C++ and Tesseract are not (see CZXingShim and CTesseract).
// ZXing-C++ 3.1.1 is a pinned source build that `make deps` (scripts/deps.d/zxing.sh)
// caches outside the clone and links from <repo>/.deps; set SHOPFLOOR_ZXING_PREFIX to use another install.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// The pixel loops (scaling, blurs, the region finder, thresholds) are optimised in debug
// builds too: unoptimised, they were four fifths of ScannerTests' CPU time (83 s of tests
// became 22 s). Release builds are optimised anyway. `-enable-testing` still comes with
// debug builds, so `@testable import` keeps working.
let pixelLoopSettings: [SwiftSetting] =
    swiftSettings + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let zxingPrefix =
    Context.environment["SHOPFLOOR_ZXING_PREFIX"]
    ?? "\(Context.packageDirectory)/../../.deps/zxing-cpp-3.1.1"

let package = Package(
    name: "Scanner",
    platforms: [.macOS(.v15)],
    products: [
        // Everything: images, barcodes, text, and what uses both (Annotation, ScanReport).
        .library(name: "Scanner", targets: ["Scanner"]),
        // Image files to pixels and the grey operations on them (libpng, libjpeg, libtiff,
        // giflib, leptonica).
        .library(name: "ScannerImages", targets: ["ScannerImages"]),
        // Barcodes (libzbar, ZXing-C++) without the OCR: never links CTesseract.
        .library(name: "ScannerBarcodes", targets: ["ScannerBarcodes"]),
        // Printed text through Tesseract (opened with dlopen on first use).
        .library(name: "ScannerText", targets: ["ScannerText"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(path: "../PNG"),
    ],
    targets: [
        // libzbar, through its own header, linked from its static archive (see the module map).
        .systemLibrary(
            name: "CZBar",
            providers: [.apt(["libzbar-dev"])]
        ),
        // Tesseract's C API (OCR), through its own header.
        // Tesseract's C API (libtesseract-dev for its header), loaded with dlopen on first use:
        // apps that never read text never map libtesseract and the ~40 libraries it brings.
        // Not a pkg-config system library on purpose: `pkg-config tesseract` would link it.
        .target(
            name: "CTesseract",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // leptonica's image operations (scaling, blur, rotation, thresholds, drawing).
        .systemLibrary(
            name: "CLeptonica",
            pkgConfig: "lept",
            providers: [.apt(["libleptonica-dev"])]
        ),
        // The image libraries CImageIO uses, each through pkg-config (its -I and -l flags)
        // and its own header; libpng's module is the suite's one, in Packages/PNG.
        .systemLibrary(
            name: "CJPEG",
            pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg-dev"])]
        ),
        .systemLibrary(
            name: "CTIFF",
            pkgConfig: "libtiff-4",
            providers: [.apt(["libtiff-dev"])]
        ),
        .systemLibrary(
            name: "CGIF",
            pkgConfig: "libgif",
            providers: [.apt(["libgif-dev"])]
        ),
        // Image files to pixels, frame by frame: PNG and JPEG through libpng and libjpeg with
        // our own error handlers (they print to stderr otherwise), TIFF through libtiff and GIF
        // through giflib (every page and frame), BMP by our reader, the rest through
        // leptonica, all silenced.
        .target(
            name: "CImageIO",
            dependencies: [
                "CLeptonica", "CJPEG", "CTIFF", "CGIF",
                .product(name: "CPNG", package: "PNG"),
            ],
            // CPNG carries no pkg-config (see Packages/PNG), and a C target does not autolink
            // a module map's `link`, so libpng is named here.
            linkerSettings: [.linkedLibrary("png16")]
        ),
        // ZXing-C++ behind a small self-contained C header; only this target sees ZXing's.
        // Not a pkg-config system library: its zxing.pc is in the pinned prefix, which
        // pkg-config finds only with PKG_CONFIG_PATH set (a plain `swift build` would not), and
        // pkg-config's `-lZXing` cannot say --whole-archive, which the static archive needs
        // (SwiftPM puts libraries before the objects that use them). Hence the two flags below.
        .target(
            name: "CZXingShim",
            cSettings: [.unsafeFlags(["-I\(zxingPrefix)/include"])],
            // The whole static archive: SwiftPM puts libraries before the objects that use them.
            // `--wrap`: libzbar's assertion messages go through zbar_quiet.c, which drops them.
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--whole-archive", "\(zxingPrefix)/lib/libZXing.a",
                    "-Xlinker", "--no-whole-archive", "-Xlinker", "--wrap=__fprintf_chk",
                ]),
                .linkedLibrary("stdc++"),
            ]
        ),
        // ImageBuffer, ImageFrames, inputs and batches, the grey operations (ours and
        // leptonica's) shared by the barcode and text passes.
        .target(
            name: "ScannerImages",
            dependencies: ["CImageIO", "CLeptonica"],
            swiftSettings: pixelLoopSettings
        ),
        // BarcodeReader: libzbar and ZXing-C++, merged, with the fallback passes.
        .target(
            name: "ScannerBarcodes",
            dependencies: [
                "ScannerImages", "CZBar", "CZXingShim",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: pixelLoopSettings
        ),
        // TextReader: Tesseract's C API through CTesseract.
        .target(
            name: "ScannerText",
            dependencies: [
                "ScannerImages", "CTesseract",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: pixelLoopSettings
        ),
        // The umbrella: re-exports the three, and holds what needs barcodes and text together.
        .target(
            name: "Scanner",
            dependencies: ["ScannerImages", "ScannerBarcodes", "ScannerText", "CLeptonica"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ScannerTests",
            dependencies: [
                "Scanner", "ScannerBarcodes", "ScannerImages", "ScannerText",
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
