import Foundation

/// The bytes of the file at `path`, or nil when it cannot be opened or read (missing,
/// unreadable, a directory): the files the tools and the server are given (schemas, merge
/// documents, policies, keys, tokens).
///
/// With FileHandle, not `FileManager.contents(atPath:)` or `Data(contentsOf:)`: on Linux
/// those leak 4 KB for every empty file they read (Specs/reliability.md, section 2).
package func fileContents(atPath path: String) -> Data? {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    return try? handle.readToEnd() ?? Data()
}
