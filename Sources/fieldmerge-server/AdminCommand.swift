import ArgumentParser
import FieldMerge
import FieldMergeServer
import FieldMergeServerPostgres
import Foundation

/// `fieldmerge-server admin`: moving a data set between files and storages, on SQLite or
/// PostgreSQL (Specs/cli.md; `fieldmerge admin` has the SQLite-only commands and runs these).
/// Failures: a message on standard error, exit code 1, nothing changed.
struct ServerAdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Export, import and copy a data set, SQLite or PostgreSQL, keeping its revisions, stamps, ids and stored replies; compact one on PostgreSQL.",
        subcommands: [Export.self, Import.self, Copy.self, Compact.self])

    /// Where one data set is: a SQLite file or a PostgreSQL schema.
    struct Place: ParsableArguments {
        @Option(help: "The data set's SQLite file (serve --db).") var db: String?
        @Option(help: "The data set's PostgreSQL database (serve --postgres).") var postgres: String?
        @Option(help: "Its PostgreSQL schema (serve --postgres-schema).") var postgresSchema: String?

        func place() throws(AdminTransferError) -> DataSetPlace {
            try DataSetPlace.from(db: db, postgres: postgres, postgresSchema: postgresSchema, names: "--db and --postgres")
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a data set as JSON lines (Specs/reliability.md, \"Moving a data set\") while servers keep serving it.",
            discussion: "Reads one committed state in one read transaction. The file holds every stored reply: keep it as private as the data set.")

        @OptionGroup var from: Place
        @Option(help: "The schema its servers serve it with (default: serve's, the league schema).") var schema: String?
        @Option(help: "A new file (default: standard output).") var to: String?

        func run() async throws {
            try await ServerAdminCommand.attempt("export") {
                let schema = try AdminTransfer.schema(schema)
                let source = try await OpenedDataSet.source(try from.place(), schema: schema)
                let out: LineWriter
                do { out = try LineWriter(path: to) } catch {
                    await source.close()
                    throw error
                }
                let started = ContinuousClock.now
                do {
                    let (header, counts) = try await AdminTransfer.export(source.storage, schema: schema, to: out)
                    try out.finish()
                    await source.close()
                    ServerAdminCommand.say(
                        "exported \(source.place) at revision \(header?.revision ?? 0) to \(out.name): \(AdminTransfer.summary(counts)) in \(ServerAdminCommand.seconds(since: started))")
                } catch {
                    await source.close()
                    if let to { try? FileManager.default.removeItem(atPath: to) }
                    throw error
                }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a data set from JSON lines written by export: all of it in one transaction, or nothing.",
            discussion: "The SQLite file must not exist yet; the PostgreSQL schema must hold no data set, or an empty one. Servers on the result serve the same devices without a reset.")

        @OptionGroup var into: Place
        @Option(help: "The schema the data set was made for (default: serve's, the league schema).") var schema: String?
        @Option(help: "The file export wrote; - for standard input.") var from: String

        func run() async throws {
            try await ServerAdminCommand.attempt("import") {
                let schema = try AdminTransfer.schema(schema)
                let lines = try LineReader(path: from)
                let target = try await OpenedDataSet.target(try into.place(), schema: schema)
                let started = ContinuousClock.now
                do {
                    let counts = try await AdminTransfer.import(lines, into: target.storage, schema: schema)
                    await target.close()
                    ServerAdminCommand.say("imported \(lines.name) into \(target.place): \(AdminTransfer.summary(counts)) in \(ServerAdminCommand.seconds(since: started))")
                } catch {
                    await target.discard()
                    throw error
                }
            }
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a data set from SQLite or PostgreSQL into a new one, while servers keep serving the original.",
            discussion: """
                Reads one committed state, writes in one transaction. The copy keeps revisions, stamps, ids, tombstones, the \
                horizon and stored replies: servers on it serve the same devices without a reset. Stop the original's servers \
                before moving devices to the copy, or writes made after the copy are not in it.
                """)

        @Option(help: "The SQLite file to copy.") var fromDb: String?
        @Option(help: "The PostgreSQL database to copy from.") var fromPostgres: String?
        @Option(help: "Its PostgreSQL schema.") var fromPostgresSchema: String?
        @Option(help: "A new SQLite file.") var toDb: String?
        @Option(help: "The PostgreSQL database to copy into.") var toPostgres: String?
        @Option(help: "Its PostgreSQL schema (holding no data set, or an empty one).") var toPostgresSchema: String?
        @Option(help: "The schema its servers serve it with (default: serve's, the league schema).") var schema: String?

        func run() async throws {
            try await ServerAdminCommand.attempt("copy") {
                let schema = try AdminTransfer.schema(schema)
                let from = try DataSetPlace.from(db: fromDb, postgres: fromPostgres, postgresSchema: fromPostgresSchema, names: "--from-db and --from-postgres")
                let to = try DataSetPlace.from(db: toDb, postgres: toPostgres, postgresSchema: toPostgresSchema, names: "--to-db and --to-postgres")
                let source = try await OpenedDataSet.source(from, schema: schema)
                let target: OpenedDataSet
                do { target = try await OpenedDataSet.target(to, schema: schema) } catch {
                    await source.close()
                    throw error
                }
                let started = ContinuousClock.now
                do {
                    let counts = try await AdminTransfer.copy(source.storage, into: target.storage, schema: schema)
                    await target.close()
                    await source.close()
                    ServerAdminCommand.say("copied \(source.place) into \(target.place): \(AdminTransfer.summary(counts)) in \(ServerAdminCommand.seconds(since: started))")
                } catch {
                    await target.discard()
                    await source.close()
                    throw error
                }
            }
        }
    }

    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove tombstones and scope departures older than a horizon from a PostgreSQL data set, while servers keep serving (a dry run unless --apply).",
            discussion: "As `fieldmerge admin compact` on a SQLite file (Specs/cli.md): one write transaction per batch, each taking its turn with the servers' writes.")

        @Option(help: "The data set's PostgreSQL database (serve --postgres).") var postgres: String
        @Option(help: "Its PostgreSQL schema (serve --postgres-schema).") var postgresSchema: String?
        @Option(help: "The schema its servers serve it with (default: serve's, the league schema).") var schema: String?
        @Option(help: "Compact what is older than this many days (by the servers' marks).") var olderThanDays: Double?
        @Option(help: "Compact through this revision.") var through: Int64?
        @Option(help: "Tombstones (and departures) per write transaction.") var batch = 10_000
        @Flag(help: "Compact; without it, only count what would go.") var apply = false

        func validate() throws {
            guard (olderThanDays == nil) != (through == nil) else { throw ValidationError("give exactly one of --older-than-days and --through") }
            if let days = olderThanDays, !(days >= 0 && days < 100_000) { throw ValidationError("--older-than-days must be from 0 to 100,000") }
            guard batch > 0 else { throw ValidationError("--batch must be positive") }
        }

        func run() async throws {
            try await ServerAdminCommand.attempt("compact") {
                let schema = try AdminTransfer.schema(schema)
                let url: PostgresURL
                do { url = try PostgresURL(postgres) } catch { throw AdminTransferError("\(error)") }
                let (server, connector) = try await OpenedDataSet.server(url, schema: postgresSchema, schema: schema)
                let started = ContinuousClock.now
                let report: CompactionReport
                do {
                    if let olderThanDays {
                        report = try await server.compact(olderThan: UInt64(olderThanDays * 86_400_000), batch: batch, dryRun: !apply)
                    } else {
                        report = try await server.compact(through: through ?? 0, batch: batch, dryRun: !apply)
                    }
                } catch {
                    await server.close()
                    await connector.shutdown()
                    throw error
                }
                await server.close()
                await connector.shutdown()
                print(report.summary + " (\(ServerAdminCommand.seconds(since: started)))")
            }
        }
    }

    /// Runs `body`; a failure is said on standard error and exits with code 1.
    static func attempt(_ command: String, _ body: () async throws -> Void) async throws {
        do { try await body() } catch {
            FileHandle.standardError.write(Data("fieldmerge admin \(command): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    static func say(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

    static func seconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return String(format: "%.2f s", seconds)
    }
}
