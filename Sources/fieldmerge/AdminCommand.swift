import ArgumentParser
import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerSQLite
import Foundation

/// `fieldmerge admin`: an operator's look at a server's SQLite data set, its backup and its
/// restore (Specs/cli.md). Failures: a message on standard error, exit code 1, nothing changed.
struct AdminCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Inspect, back up, restore and compact a server's SQLite data set; export, import and copy one.",
        subcommands: [Stats.self, Backup.self, Restore.self, Compact.self, AdminExportForwarding.self, AdminImportForwarding.self, AdminCopyForwarding.self])

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What a data set holds: records and tombstones per entity, log, stored replies, devices, file size.",
            discussion: "Reads one committed state in one read transaction; a running server is not disturbed.")

        @Option(help: "The server's SQLite file (serve --db).") var db: String
        @Flag(help: "Print one JSON object.") var json = false
        @Option(help: "List at most this many devices, the most recently seen first.") var devices = 20

        func run() throws {
            let stats = try AdminCommand.attempt("stats") { () throws(SQLiteDataSetError) in try SQLiteDataSet.stats(path: db) }
            print(json ? AdminReport.json(stats).rendered() : AdminReport.text(stats, devices: max(0, devices)))
        }
    }

    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a data set into a new file while servers keep serving it (SQLite's online backup), then check the copy.")

        @Option(help: "The server's SQLite file.") var db: String
        @Option(help: "The new file; an existing file is never overwritten.") var to: String

        func run() throws {
            let stats = try AdminCommand.attempt("backup") { () throws(SQLiteDataSetError) in try SQLiteDataSet.backup(path: db, to: to) }
            print("backed up \(db) to \(to): revision \(stats.revision), \(AdminReport.records(stats)) records, \(stats.fileBytes) bytes; integrity ok")
        }
    }

    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put a backup in place as a server's data set (stop its servers first).")

        @Option(help: "The backup file.") var from: String
        @Option(help: "The server's SQLite file.") var db: String
        @Flag(help: "Replace an existing data set.") var replace = false

        func run() throws {
            let stats = try AdminCommand.attempt("restore") { () throws(SQLiteDataSetError) in
                try SQLiteDataSet.restore(from: from, to: db, replacing: replace)
            }
            print("restored \(from) to \(db): revision \(stats.revision), \(AdminReport.records(stats)) records; integrity ok")
        }
    }

    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove tombstones and scope departures older than a horizon, while servers keep serving (a dry run unless --apply).",
            discussion: """
                Devices that have seen less than the new horizon are answered resetRequired and download the data set \
                again, keeping their unsynced changes (Specs/reliability.md, "Compaction with a horizon"). Give the horizon \
                as an age (--older-than-days, found through the revisions servers mark once a minute) or as a revision.
                """)

        @Option(help: "The server's SQLite file (serve --db).") var db: String?
        @Option(help: "Its PostgreSQL database instead (serve --postgres): runs `fieldmerge-server admin compact`.") var postgres: String?
        @Option(help: "Its PostgreSQL schema (serve --postgres-schema).") var postgresSchema: String?
        @Option(help: "With --postgres: the schema its servers serve it with (default: serve's).") var schema: String?
        @Option(help: "Compact what is older than this many days (by the servers' marks).") var olderThanDays: Double?
        @Option(help: "Compact through this revision.") var through: Int64?
        @Option(help: "Tombstones (and departures) per write transaction.") var batch = 10_000
        @Flag(help: "Compact; without it, only count what would go.") var apply = false

        func validate() throws {
            guard (db == nil) != (postgres == nil) else { throw ValidationError("give exactly one of --db and --postgres") }
            if db != nil, postgresSchema != nil || schema != nil { throw ValidationError("--postgres-schema and --schema go with --postgres") }
            guard (olderThanDays == nil) != (through == nil) else {
                throw ValidationError("give exactly one of --older-than-days and --through")
            }
            if let days = olderThanDays, !(days >= 0 && days < 100_000) { throw ValidationError("--older-than-days must be from 0 to 100,000") }
            guard batch > 0 else { throw ValidationError("--batch must be positive") }
        }

        func run() throws {
            if let postgres {
                var arguments = ["admin", "compact", "--postgres", postgres, "--batch", String(batch)]
                if let postgresSchema { arguments += ["--postgres-schema", postgresSchema] }
                if let schema { arguments += ["--schema", schema] }
                if let olderThanDays { arguments += ["--older-than-days", String(olderThanDays)] }
                if let through { arguments += ["--through", String(through)] }
                if apply { arguments.append("--apply") }
                try forward(arguments)
            }
            let db = db ?? ""
            var revision = through ?? 0
            if let days = olderThanDays {
                let cutoff = Int64(Date().timeIntervalSince1970 * 1000) - Int64(days * 86_400_000)
                let marked = try AdminCommand.attempt("compact") { () throws(SQLiteDataSetError) in
                    try SQLiteDataSet.revision(markedBy: cutoff, path: db)
                }
                guard let marked else {
                    print("nothing to compact: no revision of \(db) is marked older than \(days) days (servers mark one a minute while they commit)")
                    return
                }
                revision = marked
            }
            let report = try AdminCommand.attempt("compact") { () throws(SQLiteDataSetError) in
                try SQLiteDataSet.compact(path: db, through: revision, batch: batch, dryRun: !apply)
            }
            print(report.summary)
        }
    }

    /// Runs `body`; its failure is said on standard error and ends the process with code 1.
    static func attempt<T>(_ command: String, _ body: () throws(SQLiteDataSetError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            FileHandle.standardError.write(Data("fieldmerge admin \(command): \(error.message); nothing changed\n".utf8))
            throw ExitCode(1)
        }
    }
}
