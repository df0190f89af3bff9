import FieldMergeJSON
import Foundation
import Testing

/// `fileContents(atPath:)`, how the tools read the files they are given. Under
/// `Scripts/sanitize address` the empty file is also the leak check: Foundation's
/// `contents(atPath:)` leaked 4 KB there.
@Suite struct FileContentsTests {
    @Test func readsWhatIsThere_emptyIsEmpty_andMissingOrAFolderIsNil() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-contents-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let full = folder.appendingPathComponent("full")
        let empty = folder.appendingPathComponent("empty")
        let bytes = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try bytes.write(to: full)
        try Data().write(to: empty)
        #expect(fileContents(atPath: full.path) == bytes)
        #expect(fileContents(atPath: empty.path) == Data())
        #expect(fileContents(atPath: folder.appendingPathComponent("missing").path) == nil)
        #expect(fileContents(atPath: folder.path) == nil)
    }
}
