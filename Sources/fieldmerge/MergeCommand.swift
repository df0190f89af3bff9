import ArgumentParser
import FieldMergeJSON
import Foundation

struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merges one record three ways and prints the merged record and the conflict report.",
        discussion: """
            Reads a JSON document with "schema", "entity", "ancestor" (or null), "local", \
            "remote" and optionally "resolutionStamp" from FILE, or from standard input when \
            FILE is omitted or "-". The format is in Specs/merge-semantics.md; every file in \
            Specs/conformance/merge/ is such a document. Malformed input: a message on \
            standard error and exit code 2.
            """
    )

    @Argument(help: "The merge document; '-' or nothing for standard input.")
    var file: String?

    func run() throws {
        do {
            let data: Data
            if let file, file != "-" {
                guard let contents = fileContents(atPath: file) else {
                    throw DocumentError(path: file, message: "cannot read the file")
                }
                data = contents
            } else {
                data = FileHandle.standardInput.readDataToEndOfFile()
            }
            let document = try MergeDocument(JSONValue.parse(data))
            print(try document.run().rendered())
        } catch let error as DocumentError {
            FileHandle.standardError.write(Data("fieldmerge merge: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
