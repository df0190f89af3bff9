// swift-tools-version: 6.1
import PackageDescription

// FieldMerge benchmarks (ordo-one/benchmark): a nested package, so the main build and
// `swift test` never compile the benchmark machinery. Run from this folder:
// `swift package benchmark`; see README.md.

// A path dependency's identity is its folder's name, not the package's name: take it from
// this file's path (…/<checkout>/Benchmarks/Package.swift).
let fieldMerge = String(#filePath.split(separator: "/").dropLast(2).last ?? "main").lowercased()

let package = Package(
    name: "FieldMergeBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // No web server, PostgreSQL, JWT or command line: none of the measured products needs them.
        .package(path: "..", traits: []),
        // Only the malloc interposer: the default traits need a package this machine lacks.
        // No jemalloc either: on Swift 6.3 the interposer counts mallocs by itself.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // What the suites share: sizes, names, the metrics and their tolerances, a scratch folder.
        .target(
            name: "FieldMergeBenchmarkSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")]
        ),
        suite("MergeBenchmarks", ["FieldMerge", "FieldMergeWorkload"]),
        suite("StoreBenchmarks", ["FieldMerge", "FieldMergeSQLite", "FieldMergeWorkload"]),
        suite("CodecBenchmarks", ["FieldMerge", "FieldMergeProtocol", "FieldMergeWorkload"]),
        suite("SyncBenchmarks", [
            "FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeWorkload",
        ]),
    ],
    swiftLanguageModes: [.v6]
)

/// A benchmark suite: an executable at Benchmarks/<name>/ (where the plugin looks for them).
func suite(_ name: String, _ products: [String]) -> Target {
    .executableTarget(
        name: name,
        dependencies: [.product(name: "Benchmark", package: "benchmark"), "FieldMergeBenchmarkSupport"]
            + products.map { .product(name: $0, package: fieldMerge) },
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}
