import ArgumentParser
import FieldMergeToolSupport
import Foundation

/// The setups a server bench runs (`--setups`, `--postgres`): checked before anything runs,
/// then measured one after another, one JSON line each.
struct BenchSetups {
    /// The PostgreSQL URL, from `--postgres` or `$FIELDMERGE_POSTGRES_URL`.
    let postgres: String?
    let wanted: [String]

    /// - Throws: `ValidationError` for a setup not in `known`, or one that needs PostgreSQL
    ///   without a URL.
    init(_ setups: String?, postgres: String?, known: [String]) throws {
        let url = postgres ?? ProcessInfo.processInfo.environment["FIELDMERGE_POSTGRES_URL"]
        let wanted = setups.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            ?? (url == nil ? ["sqlite"] : known)
        for setup in wanted {
            guard known.contains(setup) else { throw ValidationError("--setups: unknown setup '\(setup)'") }
            if setup != "sqlite", url == nil { throw ValidationError("--setups \(setup) needs --postgres URL or FIELDMERGE_POSTGRES_URL") }
        }
        self.postgres = url
        self.wanted = wanted
    }

    /// Measures each setup and prints its line with `setup` added.
    func run(_ measure: (_ setup: String, _ postgres: String?) async throws -> BenchLine) async throws {
        for setup in wanted {
            var line = try await measure(setup, postgres)
            line.add("setup", setup)
            print(line.render())
        }
    }
}
