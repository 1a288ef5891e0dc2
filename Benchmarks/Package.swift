// swift-tools-version: 6.1
// Benchmarks live outside the product's build graph (as in swift-nio): `make bench` runs
// them with package-benchmark; `swift build` at the root never builds these dependencies.
import PackageDescription

let benchmarkPlugin: [Target.PluginUsage] = [.plugin(name: "BenchmarkPlugin", package: "benchmark")]

let package = Package(
    name: "ShopfloorBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(
            url: "https://github.com/ordo-one/benchmark",
            from: "1.38.1",
            traits: ["MallocInterposer"]
        ),
        .package(path: "../Packages/Models"),
        .package(path: "../Packages/Scanner"),
        .package(path: "../Packages/SharedDefaults"),
        .package(path: "../Packages/Auth"),
        .package(path: "../Packages/ImageCache"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // HelloFloor only: the framework's floor in compare/store-server-load.sh. No default
        // traits, as everywhere Hummingbird is named.
        .package(
            url: "https://github.com/hummingbird-project/hummingbird",
            from: "2.28.1",
            traits: []
        ),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The RFC 8941 parser AuthBenchmarks compares Auth's own reader with.
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
    ],
    targets: [
        .executableTarget(
            name: "ModelsBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Models", package: "Models"),
            ],
            path: "Benchmarks/ModelsBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "ScannerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Scanner", package: "Scanner"),
            ],
            path: "Benchmarks/ScannerBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "SharedDefaultsBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SharedDefaults", package: "SharedDefaults"),
            ],
            path: "Benchmarks/SharedDefaultsBenchmarks",
            plugins: benchmarkPlugin
        ),
        .executableTarget(
            name: "AuthBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Auth", package: "Auth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(
                    name: "RawStructuredFieldValues",
                    package: "swift-http-structured-headers"
                ),
            ],
            path: "Benchmarks/AuthBenchmarks",
            plugins: benchmarkPlugin
        ),
        // Run by compare/store-server-load.sh: a load generator that signs every request.
        // Helper programs live under Tools/: package-benchmark takes every executable target
        // whose folder is in Benchmarks/ for a benchmark suite and runs it.
        .executableTarget(
            name: "StoreServerLoad",
            dependencies: [.product(name: "Auth", package: "Auth")],
            path: "Tools/StoreServerLoad",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Run by compare/store-server-load.sh: Hummingbird's hello world, the floor every
        // store-server figure is compared with.
        .executableTarget(
            name: "HelloFloor",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/HelloFloor",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "ImageCacheBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ImageCache", package: "ImageCache"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ImageCacheBenchmarks",
            plugins: benchmarkPlugin
        ),
        // Run by compare/shared-defaults-vs-userdefaults.sh: real processes, both stores.
        .executableTarget(
            name: "SharedDefaultsCompare",
            dependencies: [.product(name: "SharedDefaults", package: "SharedDefaults")],
            path: "Tools/SharedDefaultsCompare",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
