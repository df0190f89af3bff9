// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "FieldMerge",
    products: [
        .library(name: "FieldMerge", targets: ["FieldMerge"]),
        .library(name: "FieldMergeJSON", targets: ["FieldMergeJSON"]),
        .executable(name: "fieldmerge", targets: ["fieldmerge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The merge core: pure Swift, no Foundation, no I/O.
        .target(name: "FieldMerge"),
        // JSON documents (schemas, records, merge requests) for tools and tests.
        .target(name: "FieldMergeJSON", dependencies: ["FieldMerge"]),
        // The benchmark workload of BENCHMARKS.md (generator, digests). No Foundation.
        .target(name: "FieldMergeWorkload", dependencies: ["FieldMerge"]),
        .executableTarget(
            name: "fieldmerge",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeWorkload",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "FieldMergeTests", dependencies: ["FieldMerge"]),
        .testTarget(name: "FieldMergeJSONTests", dependencies: ["FieldMerge", "FieldMergeJSON"]),
        .testTarget(name: "FieldMergeWorkloadTests", dependencies: ["FieldMerge", "FieldMergeWorkload"]),
    ],
    swiftLanguageModes: [.v6]
)
