import ArgumentParser
import FieldMergeJSON
import FieldMergeServerSQLite
import Foundation

/// `fieldmerge admin`: an operator's look at a server's SQLite data set, its backup and its
/// restore (Specs/cli.md). Failures: a message on standard error, exit code 1, nothing changed.
struct AdminCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Inspect, back up and restore a server's SQLite data set.",
        subcommands: [Stats.self, Backup.self, Restore.self])

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
