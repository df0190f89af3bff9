import FieldMerge
import FieldMergeJSON
import FieldMergeSyncHTTP
import Foundation

/// Input refused before anything is touched, with what is wrong in words.
public struct ReplicaSyncBadInput: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The input of a run, checked: a URL the transport can use, the schema, the token source.
struct CheckedReplicaSyncInput: Sendable {
    var url: URL
    var schema: Schema
    var token: HTTPTransport.TokenProvider?
}

extension ReplicaSyncInput {
    /// Checks everything that can be checked without opening the replica or calling the
    /// server; nothing is created or changed.
    func checked() throws(ReplicaSyncBadInput) -> CheckedReplicaSyncInput {
        func bad(_ message: String) -> ReplicaSyncBadInput { ReplicaSyncBadInput(message: message) }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = parsed.host, !host.isEmpty
        else {
            throw bad("bad --url \(url): expected http://HOST[:PORT]/PATH or https://…, e.g. http://127.0.0.1:8080/sync")
        }
        guard maxRounds >= 1 else { throw bad("--rounds must be at least 1") }
        guard batchSize >= 1, batchSize <= Int(Int32.max) else { throw bad("--batch-size must be within 1...\(Int32.max)") }
        guard settleTimeout >= 0 else { throw bad("--timeout must not be negative") }
        let schema: Schema
        if let appSchema {
            schema = appSchema
        } else {
            do {
                schema = try SchemaDocument.load(contentsOf: self.schema)
            } catch {
                throw bad("bad schema file \(self.schema): \(error)")
            }
        }
        guard !replica.isEmpty else { throw bad("--replica needs a file name") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: replica, isDirectory: &isDirectory), isDirectory.boolValue {
            throw bad("--replica \(replica) is a directory, not a replica file")
        }
        let folder = (replica as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) || !isDirectory.boolValue {
            throw bad("--replica \(replica): the folder \(folder) does not exist")
        }
        var token: HTTPTransport.TokenProvider?
        if let tokenFile {
            _ = try TokenFile.read(tokenFile)
            token = { _ in try TokenFile.read(tokenFile) }
        }
        return CheckedReplicaSyncInput(url: parsed, schema: schema, token: token)
    }
}

/// A bearer token kept in a file (one line; surrounding white space ignored).
enum TokenFile {
    static func read(_ path: String) throws(ReplicaSyncBadInput) -> String {
        guard let data = fileContents(atPath: path) else {
            throw ReplicaSyncBadInput(message: "cannot read the token file \(path)")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw ReplicaSyncBadInput(message: "the token file \(path) is empty") }
        guard !token.contains(where: \.isNewline) else {
            throw ReplicaSyncBadInput(message: "the token file \(path) holds more than one line")
        }
        return token
    }
}
