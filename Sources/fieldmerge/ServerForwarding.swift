import ArgumentParser
import FieldMergeToolSupport
import Foundation

/// `fieldmerge serve ...`: runs `fieldmerge-server serve ...` from the same folder (hidden:
/// `fieldmerge-server --help` documents it). Exit code 2 when it is not there.
struct ServeForwarding: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Runs `fieldmerge-server serve` (built with `swift build --product fieldmerge-server`).",
        shouldDisplay: false
    )

    @Argument(parsing: .captureForPassthrough, help: "The arguments of `fieldmerge-server serve`.")
    var arguments: [String] = []

    func run() throws { try forward(["serve"] + arguments) }
}

/// `fieldmerge bench serve ...`: runs `fieldmerge-server bench serve ...`, likewise.
struct ServeBenchForwarding: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "HTTP load on the server: runs `fieldmerge-server bench serve`.",
        shouldDisplay: false
    )

    @Argument(parsing: .captureForPassthrough, help: "The arguments of `fieldmerge-server bench serve`.")
    var arguments: [String] = []

    func run() throws { try forward(["bench", "serve"] + arguments) }
}

/// `fieldmerge bench live ...`: runs `fieldmerge-server bench live ...`, likewise.
struct LiveBenchForwarding: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "Live sync on loopback: runs `fieldmerge-server bench live`.",
        shouldDisplay: false
    )

    @Argument(parsing: .captureForPassthrough, help: "The arguments of `fieldmerge-server bench live`.")
    var arguments: [String] = []

    func run() throws { try forward(["bench", "live"] + arguments) }
}

func forward(_ arguments: [String]) throws -> Never {
    do {
        try SiblingExecutable.exec("fieldmerge-server", arguments: arguments)
    } catch {
        FileHandle.standardError.write(Data("fieldmerge: \(error)\n".utf8))
        throw ExitCode(2)
    }
}

/// `fieldmerge admin export`, `import` and `copy`: each runs `fieldmerge-server admin ...`
/// (they reach PostgreSQL too, which only fieldmerge-server links).
protocol AdminForwarding: ParsableCommand {
    var arguments: [String] { get }
}

extension AdminForwarding {
    func run() throws { try forward(["admin", Self.configuration.commandName ?? ""] + arguments) }
}

struct AdminExportForwarding: AdminForwarding {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a data set (SQLite or PostgreSQL) as JSON lines: runs `fieldmerge-server admin export`.")

    @Argument(parsing: .captureForPassthrough, help: "The arguments of `fieldmerge-server admin export` (see its --help).")
    var arguments: [String] = []
}

struct AdminImportForwarding: AdminForwarding {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Make a data set from JSON lines: runs `fieldmerge-server admin import`.")

    @Argument(parsing: .captureForPassthrough, help: "The arguments of `fieldmerge-server admin import` (see its --help).")
    var arguments: [String] = []
}

struct AdminCopyForwarding: AdminForwarding {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy a data set between SQLite and PostgreSQL: runs `fieldmerge-server admin copy`.")

    @Argument(parsing: .captureForPassthrough, help: "The arguments of `fieldmerge-server admin copy` (see its --help).")
    var arguments: [String] = []
}
