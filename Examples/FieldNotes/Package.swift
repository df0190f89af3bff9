// swift-tools-version: 6.1
import PackageDescription

// Field notes: an app written only with FieldMerge's typed API and live queries. It names
// FieldMerge with `traits: []`, as an app does, so SwiftPM resolves no other package; the
// in-process server (FieldMergeServer, FieldMergeServerSQLite) needs no trait either.
// `swift run --package-path Examples/FieldNotes field-notes` from the repository's root.
let package = Package(
    name: "FieldNotes",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "FieldMerge", path: "../..", traits: []),
    ],
    targets: [
        .executableTarget(
            name: "field-notes",
            dependencies: [
                .product(name: "FieldMerge", package: "FieldMerge"),
                .product(name: "FieldMergeSQLite", package: "FieldMerge"),
                .product(name: "FieldMergeSync", package: "FieldMerge"),
                .product(name: "FieldMergeServer", package: "FieldMerge"),
                .product(name: "FieldMergeServerSQLite", package: "FieldMerge"),
            ],
            path: "Sources/FieldNotes"
        ),
    ],
    swiftLanguageModes: [.v6]
)
