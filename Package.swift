// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "FieldMerge",
    // Synchronization's Atomic and Mutex (a test wall clock in the core, the servers'
    // counters) set the floor; custom executors and assumeIsolated need 14 / 17.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "FieldMerge", targets: ["FieldMerge"]),
        .library(name: "FieldMergeJSON", targets: ["FieldMergeJSON"]),
        .library(name: "FieldMergeSQLite", targets: ["FieldMergeSQLite"]),
        .library(name: "FieldMergeProtocol", targets: ["FieldMergeProtocol"]),
        .library(name: "FieldMergeSync", targets: ["FieldMergeSync"]),
        .library(name: "FieldMergeServer", targets: ["FieldMergeServer"]),
        .library(name: "FieldMergeServerSQLite", targets: ["FieldMergeServerSQLite"]),
        .library(name: "FieldMergeWorkload", targets: ["FieldMergeWorkload"]),
        .library(name: "FieldMergeSyncHTTP", targets: ["FieldMergeSyncHTTP"]),
        .library(name: "FieldMergeSyncNIO", targets: ["FieldMergeSyncNIO"]),
        .library(name: "FieldMergeServerHTTP", targets: ["FieldMergeServerHTTP"]),
        .library(name: "FieldMergeServerPrometheus", targets: ["FieldMergeServerPrometheus"]),
        .library(name: "FieldMergeServerAuth", targets: ["FieldMergeServerAuth"]),
        .library(name: "FieldMergeServerPostgres", targets: ["FieldMergeServerPostgres"]),
        .library(name: "FieldMergeServeCommand", targets: ["FieldMergeServeCommand"]),
        .library(name: "FieldMergeToolCommands", targets: ["FieldMergeToolCommands"]),
        .executable(name: "fieldmerge", targets: ["fieldmerge"]),
        .executable(name: "fieldmerge-server", targets: ["fieldmerge-server"]),
    ],
    // What an app that only syncs a device needs (core, store, protocol, client, HTTP
    // transport) has no dependency at all. The rest is behind two traits, both on by default
    // here; an app's package that names FieldMerge with `traits: []` resolves no other
    // package and compiles none (Specs/architecture.md).
    traits: [
        .trait(
            name: "Server",
            description: "The HTTP server, bearer tokens, metrics and PostgreSQL storage: Hummingbird, swift-log, swift-metrics, swift-prometheus, swift-service-lifecycle, jwt-kit, postgres-nio."
        ),
        .trait(name: "Tools", description: "The fieldmerge and fieldmerge-server executables: swift-argument-parser."),
        .default(enabledTraits: ["Server", "Tools"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // No default traits: swift-configuration support and full Foundation are not used here.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Bearer tokens (JWT) for the HTTP server only; no app-facing module links it.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // Already there for jwt-kit; named for `serve`'s attachment hashing (SHA instructions).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Already in the graph through Hummingbird and postgres-nio; named for the live
        // channel of processes that hold many devices (FieldMergeSyncNIO).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // Metrics of the HTTP server (GET /metrics): the API, already in the graph through
        // Hummingbird, and the Prometheus backend, linked by server-side targets only.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // The merge core: pure Swift, no Foundation, no I/O.
        .target(name: "FieldMerge"),
        // The system's SQLite, through a module map and nothing else.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The SQLite driver: connections, statements, transactions, checkpoints, the executor
        // that keeps blocking calls off the shared pool. Knows no store and no server.
        .target(name: "FieldMergeSQLiteDriver", dependencies: ["FieldMerge", "CSQLite"]),
        // The device's store on the driver: app tables, sync metadata, outbox, temporary ids.
        // The system calls on files that attachments need (device cache, transports, the
        // server's directory store), kept out of the core, which does no I/O.
        .target(name: "FieldMergeFiles", dependencies: ["FieldMerge"]),
        .target(name: "FieldMergeSQLite", dependencies: ["FieldMerge", "FieldMergeSQLiteDriver", "FieldMergeFiles"]),
        // zlib, for gzip on the wire.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The revision protocol's bytes: wire model, codec, gzip, the transport protocol.
        .target(name: "FieldMergeProtocol", dependencies: ["FieldMerge", "CZlib"]),
        // What a device links: SyncClient over a SyncTransport, on the store. No server code.
        .target(name: "FieldMergeSync", dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeFiles"]),
        // The server's logic (strict and merge mode, replay, paging) over its storage, the
        // exchange every transport runs, and the in-process transport. No storage here.
        .target(
            name: "FieldMergeServer", dependencies: ["FieldMerge", "FieldMergeProtocol", "FieldMergeFiles"]
        ),
        // The server's storage on SQLite (the embedded default), beside the PostgreSQL one.
        .target(
            name: "FieldMergeServerSQLite", dependencies: ["FieldMerge", "FieldMergeProtocol", "FieldMergeServer", "FieldMergeSQLiteDriver", "FieldMergeFiles"]
        ),
        // A server's data set as JSON lines (admin export and import).
        .target(name: "FieldMergeDataSetFile", dependencies: ["FieldMerge", "FieldMergeJSON", "FieldMergeServer"]),
        // JSON documents (schemas, records, merge requests) for tools and tests.
        .target(name: "FieldMergeJSON", dependencies: ["FieldMerge"]),
        // The benchmark workload of Specs/benchmarks.md (generator, digests). No Foundation.
        .target(name: "FieldMergeWorkload", dependencies: ["FieldMerge"]),
        // The HTTP client transport (URLSession through FoundationNetworking). No server code.
        .target(name: "FieldMergeSyncHTTP", dependencies: ["FieldMerge", "FieldMergeProtocol", "FieldMergeFiles"]),
        // The live channel and the attachment transport on SwiftNIO, for Linux processes that
        // hold many devices or move large files (a backend worker, the benches): no app links
        // it, and it needs the Server trait.
        .target(
            name: "FieldMergeSyncNIO",
            dependencies: [
                "FieldMergeProtocol", "FieldMergeSyncHTTP", "FieldMergeFiles",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Server"])),
            ]
        ),
        // POST /sync over HTTP with Hummingbird 2. Kept apart so apps never link a web server.
        .target(
            name: "FieldMergeServerHTTP",
            dependencies: [
                "FieldMergeProtocol", "FieldMergeServer",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
                // The HTTP/1.1 channel, wrapped with the server's timeouts and connection limit.
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
                // The metrics API only (GET /metrics renders what a backend gives it).
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Server"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Server"])),
            ]
        ),
        // The endpoint's metrics in Prometheus's text format (swift-prometheus): the one
        // module that links the backend; `serve --metrics` uses it.
        .target(
            name: "FieldMergeServerPrometheus",
            dependencies: [
                "FieldMerge", "FieldMergeServerHTTP",
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Server"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Server"])),
            ]
        ),
        // Bearer-token (JWT) authentication and role permissions for the HTTP server.
        .target(
            name: "FieldMergeServerAuth",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeProtocol", "FieldMergeServer", "FieldMergeServerHTTP",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "JWTKit", package: "jwt-kit", condition: .when(traits: ["Server"])),
            ]
        ),
        // The server's storage on PostgreSQL, so several server processes can serve one data
        // set. Server side only: no app-facing module depends on it.
        .target(
            name: "FieldMergeServerPostgres",
            dependencies: [
                "FieldMerge", "FieldMergeProtocol", "FieldMergeServer",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
            ]
        ),
        // `fieldmerge simulate`: devices, faults, oracle. Transport-agnostic (no HTTP here).
        .target(
            name: "FieldMergeSimulation",
            dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeWorkload"]
        ),
        // `fieldmerge sync`: one replica file synced with a server over HTTP, its outcome and
        // exit codes; a library so that tests run it against a live server.
        .target(
            name: "FieldMergeSyncTool",
            dependencies: ["FieldMerge", "FieldMergeJSON", "FieldMergeSQLite", "FieldMergeSync", "FieldMergeSyncHTTP"]
        ),
        // `sync` and `schema diff` as a library (every flag of `fieldmerge sync`): an app's own
        // executable runs them with its Swift schema. Needs the Tools trait, no server module.
        .target(
            name: "FieldMergeToolCommands",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeSync", "FieldMergeSyncTool",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Tools"])),
            ]
        ),
        // What the tools share: bench lines, child processes, the sibling executable.
        .target(name: "FieldMergeToolSupport"),
        // `fieldmerge`: simulate, sync, merge, schema and the device-side benches. No web
        // server, PostgreSQL or JWT: the README's first command builds this alone.
        .executableTarget(
            name: "fieldmerge",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeWorkload", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync",
                "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeSyncHTTP", "FieldMergeSimulation", "FieldMergeSyncTool", "FieldMergeToolSupport",
                "FieldMergeToolCommands", "FieldMergeCryptoHashing",
                // `bench attachments --transport nio` (NIOAttachmentTransport).
                .target(name: "FieldMergeSyncNIO", condition: .when(traits: ["Server"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Tools"])),
            ]
        ),
        // `serve` as a library (every flag of `fieldmerge-server serve`): an app's own
        // executable runs it with its Swift schema, custom strategies and access rules.
        // Needs both traits, like fieldmerge-server.
        .target(
            name: "FieldMergeServeCommand",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeProtocol", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeSQLiteDriver",
                "FieldMergeServerHTTP", "FieldMergeServerAuth", "FieldMergeServerPostgres", "FieldMergeServerPrometheus",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Tools"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
                "FieldMergeCryptoHashing",
            ]
        ),
        // `AttachmentHashing.crypto`: swift-crypto's SHA-256 for attachments, about ten times
        // the core's (the server's uploads, the tools' devices). Empty without the Server
        // trait; no app-facing module links it (an app on Apple platforms can hash with
        // CryptoKit through `AttachmentHashing` itself).
        .target(
            name: "FieldMergeCryptoHashing",
            dependencies: ["FieldMerge", .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Server"]))]
        ),
        // `fieldmerge-server`: serve (FieldMergeServeCommand, the league schema by default)
        // and bench serve.
        .executableTarget(
            name: "fieldmerge-server",
            dependencies: [
                "FieldMerge", "FieldMergeJSON", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeSyncHTTP",
                "FieldMergeSyncNIO", "FieldMergeServerHTTP", "FieldMergeServerAuth", "FieldMergeServerPostgres", "FieldMergeServerPrometheus", "FieldMergeSimulation",
                "FieldMergeToolSupport", "FieldMergeServeCommand", "FieldMergeDataSetFile",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Tools"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
            ]
        ),
        // An app's own ten-line server (FieldMergeServeCommand with a custom strategy the
        // stock fieldmerge-server cannot serve); ServeCommandLibraryTests runs it.
        .executableTarget(
            name: "fieldmerge-serve-example",
            dependencies: ["FieldMerge", "FieldMergeServeCommand"]
        ),
        // Schemas and scenarios several test targets share; only tests link it.
        .target(
            name: "FieldMergeTestSupport", dependencies: ["FieldMerge", "FieldMergeJSON", "FieldMergeProtocol", "FieldMergeServer", "FieldMergeDataSetFile"],
            path: "Tests/FieldMergeTestSupport"
        ),
        .testTarget(name: "FieldMergeTests", dependencies: ["FieldMerge", "FieldMergeWorkload"]),
        .testTarget(
            name: "FieldMergeProtocolTests",
            dependencies: ["FieldMerge", "FieldMergeProtocol", "FieldMergeJSON", "FieldMergeWorkload", "FieldMergeTestSupport"]
        ),
        .testTarget(name: "FieldMergeSQLiteDriverTests", dependencies: ["FieldMerge", "FieldMergeSQLiteDriver"]),
        // The server alone, on its embedded SQLite storage (no device store, no client).
        .testTarget(
            name: "FieldMergeServerTests",
            dependencies: ["FieldMerge", "FieldMergeProtocol", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeSQLiteDriver", "FieldMergeTestSupport"]
        ),
        .testTarget(name: "FieldMergeSQLiteTests", dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeWorkload"]),
        .testTarget(name: "FieldMergeSyncTests", dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeWorkload", "FieldMergeJSON", "FieldMergeTestSupport", "FieldMergeFiles"]),
        .testTarget(name: "FieldMergeJSONTests", dependencies: ["FieldMerge", "FieldMergeJSON", "FieldMergeTestSupport"]),
        // The executables as processes (`swift test` builds them first): fieldmerge merge,
        // sync, schema diff, admin and the serve forwarding to fieldmerge-server.
        .testTarget(
            name: "FieldMergeCommandTests",
            dependencies: ["FieldMergeJSON", "FieldMergeTestSupport", "FieldMergeSQLite", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite"]),
        .testTarget(name: "FieldMergeWorkloadTests", dependencies: ["FieldMerge", "FieldMergeWorkload"]),
        .testTarget(
            name: "FieldMergeServerHTTPTests",
            dependencies: [
                "FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeSyncHTTP",
                "FieldMergeSyncNIO", "FieldMergeServerHTTP", "FieldMergeServerAuth", "FieldMergeJSON", "FieldMergeSyncTool", "FieldMergeSimulation", "FieldMergeTestSupport",
                "FieldMergeCryptoHashing",
                "FieldMergeServerPrometheus", "FieldMergeServeCommand", "FieldMergeToolCommands", "FieldMergeFiles",
                .product(name: "JWTKit", package: "jwt-kit", condition: .when(traits: ["Server"])),
                // The attachment transport's handlers on an EmbeddedChannel (AttachmentSilenceTests).
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOEmbedded", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
                .product(name: "InMemoryLogging", package: "swift-log", condition: .when(traits: ["Server"])),
            ]
        ),
        .testTarget(
            name: "FieldMergeServerPostgresTests",
            dependencies: [
                "FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeJSON",
                "FieldMergeServerPostgres", "FieldMergeTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Server"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
            ]
        ),
        .testTarget(
            name: "FieldMergeSimulationTests",
            dependencies: ["FieldMerge", "FieldMergeSQLite", "FieldMergeProtocol", "FieldMergeSync", "FieldMergeServer", "FieldMergeServerSQLite", "FieldMergeSimulation"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
