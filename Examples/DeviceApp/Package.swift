// swift-tools-version: 6.1
import PackageDescription

// What an iOS app's package does to sync a device: it names FieldMerge with `traits: []`
// and links the core, the store, the client and the HTTP transport. SwiftPM then resolves
// no other package and compiles no server code (Scripts/check-device-app checks both).
// `swift run --package-path Examples/DeviceApp device-app` from the repository's root.
let package = Package(
    name: "DeviceApp",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "FieldMerge", path: "../..", traits: []),
    ],
    targets: [
        .executableTarget(
            name: "device-app",
            dependencies: [
                .product(name: "FieldMerge", package: "FieldMerge"),
                .product(name: "FieldMergeSQLite", package: "FieldMerge"),
                .product(name: "FieldMergeSync", package: "FieldMerge"),
                .product(name: "FieldMergeSyncHTTP", package: "FieldMerge"),
            ],
            path: "Sources/DeviceApp"
        ),
    ],
    swiftLanguageModes: [.v6]
)
