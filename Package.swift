// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "FieldMerge",
    products: [
        .library(name: "FieldMerge", targets: ["FieldMerge"]),
        .library(name: "FieldMergeJSON", targets: ["FieldMergeJSON"]),
        .library(name: "FieldMergeSQLite", targets: ["FieldMergeSQLite"]),
        .library(name: "FieldMergeSync", targets: ["FieldMergeSync"]),
        .executable(name: "fieldmerge", targets: ["fieldmerge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The merge core: pure Swift, no Foundation, no I/O.
        .target(name: "FieldMerge"),
        // The system's SQLite, through a module map and nothing else.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Thin persistence on the SQLite C API: app tables, sync metadata, outbox, ids.
        .target(name: "FieldMergeSQLite", dependencies: ["FieldMerge", "CSQLite"]),
        // zlib, for gzip on the wire.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The revision protocol: wire codec, server logic, client, transports.
        .target(name: "FieldMergeSync", dependencies: ["FieldMerge", "FieldMergeSQLite", "CZlib"]),
        // JSON documents (schemas, records, merge requests) for tools and tests.
        .target(name: "FieldMergeJSON", dependencies: ["FieldMerge"]),
        // The benchmark workload of BENCHMARKS.md (generator, digests). No Foundation.
        .target(name: "FieldMergeWorkload", dependencies: ["FieldMerge"]),
        .executableTarget(
            name: "fieldmerge",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeWorkload", "FieldMergeSQLite", "FieldMergeSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "FieldMergeTests", dependencies: ["FieldMerge", "FieldMergeWorkload"]),
        .testTarget(name: "FieldMergeSQLiteTests", dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeWorkload"]),
        .testTarget(name: "FieldMergeSyncTests", dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeSync", "FieldMergeWorkload", "FieldMergeJSON"]),
        .testTarget(name: "FieldMergeJSONTests", dependencies: ["FieldMerge", "FieldMergeJSON"]),
        .testTarget(name: "FieldMergeWorkloadTests", dependencies: ["FieldMerge", "FieldMergeWorkload"]),
    ],
    swiftLanguageModes: [.v6]
)
