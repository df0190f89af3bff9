// swift-tools-version: 6.1
import PackageDescription

// A separate package, as an app's would be: it names only FieldMerge's products.
// `swift run --package-path Examples team-tasks` from the repository's root.
let package = Package(
    name: "FieldMergeExamples",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        // The in-process server of this example needs the Server trait; no tool is built.
        .package(name: "FieldMerge", path: "..", traits: ["Server"]),
    ],
    targets: [
        .executableTarget(
            name: "team-tasks",
            dependencies: [
                .product(name: "FieldMerge", package: "FieldMerge"),
                .product(name: "FieldMergeSQLite", package: "FieldMerge"),
                .product(name: "FieldMergeSync", package: "FieldMerge"),
                .product(name: "FieldMergeSyncHTTP", package: "FieldMerge"),
                .product(name: "FieldMergeServer", package: "FieldMerge"),
                .product(name: "FieldMergeServerSQLite", package: "FieldMerge"),
                .product(name: "FieldMergeServerHTTP", package: "FieldMerge"),
            ],
            path: "Sources/TeamTasks"
        ),
    ],
    swiftLanguageModes: [.v6]
)
