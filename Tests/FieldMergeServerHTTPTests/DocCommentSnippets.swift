import Foundation
import Testing

/// The Swift snippets of the `///` comments in Sources/, kept like the documents' ones
/// (``DocSnippets``): each source file with a `/// ```swift` block has a test file that holds
/// a copy of every block between `// <marker> block begin` and `… end`, in order.
extension DocSnippets {
    /// Each source file with Swift blocks in its doc comments, the test file that compiles
    /// (and, where it can, runs) them and the marker of its copies.
    static let docComments: [(document: String, testFile: String, marker: String)] = [
        ("Sources/FieldMergeSQLiteDriver/Database.swift", sqliteTests, "Database.swift"),
        ("Sources/FieldMergeSQLiteDriver/Database+Transaction.swift", sqliteTests, "Database+Transaction.swift"),
        ("Sources/FieldMergeSQLiteDriver/Statement.swift", sqliteTests, "Statement.swift"),
        ("Sources/FieldMergeSQLiteDriver/SQLiteError.swift", sqliteTests, "SQLiteError.swift"),
        ("Sources/FieldMerge/Concurrency/SerialQueueExecutor.swift", sqliteTests, "SerialQueueExecutor.swift"),
        ("Sources/FieldMergeSQLite/StoredRecord.swift", storeTests, "StoredRecord.swift"),
        ("Sources/FieldMergeSQLite/StoreReader.swift", storeTests, "StoreReader.swift"),
        ("Sources/FieldMergeSQLite/Store+Untyped.swift", storeTests, "Store+Untyped.swift"),
        ("Sources/FieldMergeSQLite/Store+Transaction.swift", storeTests, "Store+Transaction.swift"),
        ("Sources/FieldMergeSync/SyncClient+Changes.swift", storeTests, "SyncClient+Changes.swift"),
        ("Sources/FieldMergeSQLite/RecordQuery.swift", queryTests, "RecordQuery.swift"),
        ("Sources/FieldMerge/RecordMergeInput+Names.swift", "Tests/FieldMergeTests/RecordRuleNameTests.swift",
         "RecordMergeInput+Names.swift"),
        ("Sources/FieldMergeSQLite/Store+Observation.swift", queryTests, "Store+Observation.swift"),
        ("Sources/FieldMergeServer/TenantDirectory.swift", serverTests, "TenantDirectory.swift"),
        ("Sources/FieldMergeServerHTTP/SyncHTTPServer.swift", serverTests, "SyncHTTPServer.swift"),
        ("Sources/FieldMergeServerHTTP/SyncHTTPServer+Shutdown.swift", serverTests, "SyncHTTPServer+Shutdown.swift"),
        ("Sources/FieldMergeServerHTTP/SyncEndpoint.swift", serverTests, "SyncEndpoint.swift"),
        ("Sources/FieldMergeServerAuth/BearerAuthenticator.swift", serverTests, "BearerAuthenticator.swift"),
        ("Sources/FieldMergeProtocol/Live/ServerSentEventParser.swift",
         "Tests/FieldMergeProtocolTests/ServerSentEventParserTests.swift", "ServerSentEventParser.swift"),
        ("Sources/FieldMergeSimulation/Simulation.swift",
         "Tests/FieldMergeSimulationTests/DocCommentSimulationTests.swift", "Simulation.swift"),
    ]
    static let sqliteTests = "Tests/FieldMergeServerHTTPTests/DocCommentSQLiteTests.swift"
    static let storeTests = "Tests/FieldMergeServerHTTPTests/DocCommentStoreTests.swift"
    static let queryTests = "Tests/FieldMergeServerHTTPTests/DocCommentQueryTests.swift"
    static let serverTests = "Tests/FieldMergeServerHTTPTests/DocCommentServerTests.swift"

    /// The lines of a document; for a Swift source file, the text of its `///` comments (one
    /// space after the slashes dropped) and an empty line for each other line.
    static func documentLines(_ relativePath: String) throws -> [String] {
        let all = try lines(relativePath)
        guard relativePath.hasSuffix(".swift") else { return all }
        return all.map { line in
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            guard trimmed.hasPrefix("///") else { return "" }
            let text = trimmed.dropFirst(3)
            return String(text.hasPrefix(" ") ? text.dropFirst() : text)
        }
    }
}

/// Every source file in Sources/ with a `/// ```swift` block must be in
/// ``DocSnippets/docComments``, and each listed one must match its copies.
@Suite struct DocCommentSnippetCoverageTests {
    @Test func everySourceFileWithSwiftBlocks_isListed() throws {
        let root = DocSnippets.root()
        let sources = root.appendingPathComponent("Sources")
        let paths = try #require(FileManager.default.subpaths(atPath: sources.path))
        let files = paths.filter { $0.hasSuffix(".swift") }.map { "Sources/" + $0 }
        #expect(files.count > 50, "found only \(files.count) source files")
        let listed = Set(DocSnippets.docComments.map(\.document))
        var withBlocks: [String] = []
        for file in files where !DocSnippets.swiftBlocks(try DocSnippets.documentLines(file)).isEmpty {
            withBlocks.append(file)
            #expect(listed.contains(file), "\(file) has /// ```swift blocks that no test runs: add it to DocSnippets.docComments")
        }
        #expect(withBlocks.count >= 14, "found only \(withBlocks)")
    }

    @Test(arguments: DocSnippets.docComments.map(\.document))
    func blocks_areTheCodeTheTestsCompile(_ document: String) throws {
        let entry = try #require(DocSnippets.docComments.first { $0.document == document })
        try DocSnippets.expectBlocksMatch(document: entry.document, marker: entry.marker, testFiles: [entry.testFile])
    }
}
