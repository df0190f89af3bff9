import ArgumentParser
import FieldMerge
import FieldMergeJSON
import Foundation

/// `fieldmerge schema diff OLD NEW`: what moving a data set from one schema file to another
/// changes, and whether stores and servers make each change on their own (Specs/schema.md).
/// In an app's own executable (``FieldMergeTool``) the new version may be the app's Swift
/// schema.
public struct SchemaCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Work with schema files.", subcommands: [Diff.self])

    public init() {}

    /// `schema diff OLD [NEW]`.
    public struct Diff: ParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "List the changes from one schema file to another and whether each migrates on its own.",
            discussion: "Exit code 0 when every change is safe (or there is none), 1 when one is not, 2 for a bad file.")

        @Argument(help: "The schema file of the version before.") var old: String
        @Argument(help: "The schema file of the new version; in an app's own tool, the app's schema when omitted.") var new: String?

        public init() {}

        public func validate() throws {
            if new == nil, FieldMergeTool.schema == nil { throw ValidationError("give the schema file of the new version") }
        }

        public func run() throws {
            let before = try Self.load(old)
            guard let after = try new.map(Self.load) ?? FieldMergeTool.schema.map({ (outline: SchemaOutline($0), version: $0.version) }) else {
                throw ValidationError("give the schema file of the new version")
            }
            let changes = before.outline.changes(to: after.outline)
            print("schema version \(before.version) -> \(after.version): \(changes.isEmpty ? "no changes" : "\(changes.count) change\(changes.count == 1 ? "" : "s")")")
            for change in changes { print("  \(change.isSafe ? "safe  " : "UNSAFE") \(change)") }
            var problems: [String] = []
            if !changes.isEmpty && after.version <= before.version { problems.append("a changed schema needs a higher version") }
            if changes.contains(where: { !$0.isSafe }) { problems.append("unsafe changes are refused by stores and servers") }
            for problem in problems { print("not migratable: \(problem)") }
            if !problems.isEmpty { throw ExitCode(1) }
        }

        /// The file's outline: custom strategies and record rules count by name, so an app's
        /// schema files compare without the app's code.
        static func load(_ file: String) throws -> (outline: SchemaOutline, version: Int) {
            do {
                return try SchemaDocument.loadOutline(contentsOf: file)
            } catch {
                FileHandle.standardError.write(Data("fieldmerge schema diff: bad schema file \(file): \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
