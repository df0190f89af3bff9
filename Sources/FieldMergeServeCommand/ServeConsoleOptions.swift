import ArgumentParser
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import Foundation

/// `fieldmerge serve`'s options for the operator's console (Specs/http.md, "The operator's
/// console").
struct ServeConsoleOptions: ParsableArguments {
    @Flag(help: "Serve the operator's console: GET /console (a web page) and GET /console/api/overview (its data: data set, devices and how far behind each is, conflicts, refusals and failures per minute, revision rate, largest entities). With token authentication it needs a token with --console-role; without, it answers loopback clients only.")
    var console = false

    @Option(help: "The role (the token's 'roles' claim) the console needs (default: admin).")
    var consoleRole: String?

    func validate() throws {
        if !console, consoleRole != nil { throw ValidationError("--console-role needs --console") }
        if let consoleRole, consoleRole.isEmpty || consoleRole.contains(where: \.isWhitespace) {
            throw ValidationError("--console-role must be a role name, without white space")
        }
    }

    /// The console, nil without `--console`; `sqlite` is the data set's SQLite file, whose
    /// statistics it shows (`SQLiteDataSet.stats`), read on a thread of their own.
    func load(storage: String, sqlite: String?) -> SyncConsole? {
        guard console else { return nil }
        var made = SyncConsole(role: consoleRole ?? "admin", storage: storage)
        if let sqlite {
            made.dataSet = {
                try await withCheckedThrowingContinuation { continuation in
                    Thread {
                        continuation.resume(with: Result { () throws(SQLiteDataSetError) in Self.statistics(try SQLiteDataSet.stats(path: sqlite)) })
                    }.start()
                }
            }
        }
        return made
    }

    static func statistics(_ stats: SQLiteDataSetStats) -> ConsoleDataSetStatistics {
        ConsoleDataSetStatistics(
            revision: stats.revision,
            entities: stats.entities.map { .init(name: $0.name, records: $0.records, tombstones: $0.tombstones) },
            logEntries: stats.logEntries,
            devices: stats.devices.map { .init(client: $0.client, user: $0.user, lastSeen: $0.lastSeen) },
            fileBytes: stats.fileBytes, freeBytes: stats.freeBytes)
    }
}
