import Foundation
import Testing

/// Keeps the Swift snippets of the documentation and the code the tests run the same.
///
/// Every ```swift block of a document appears in its test files between
/// `// <marker> block begin` and `// <marker> block end`, in order (the files' regions read
/// one file after the other), verbatim apart from its indentation; its `import` lines are
/// those files' imports. ``expectBlocksMatch(document:marker:testFiles:)`` reads them all
/// and records an issue for any difference, so changing a snippet means changing its copy
/// (and the checks after it). The README's copies are the code of the `Examples/FieldNotes`
/// app, which CI builds and runs. ``documents`` lists every document with
/// Swift blocks; a document that gains its first block and is not listed fails
/// `DocSnippetCoverageTests`.
enum DocSnippets {
    /// Each document with Swift blocks (a path from the repository's root), the files that
    /// run them and the marker of its copies.
    static let documents: [(document: String, testFiles: [String], marker: String)] = [
        ("README.md", readmeCode, "README"),
        ("Sources/FieldMergeSync/Documentation.docc/Tour.md", ["Tests/FieldMergeServerHTTPTests/TourArticleTests.swift"], "Tour"),
        ("Specs/http.md", ["Tests/FieldMergeServerHTTPTests/HTTPSpecExampleTests.swift"], "http.md"),
        ("Sources/FieldMergeSync/Documentation.docc/BuildingATwoDeviceApp.md",
         ["Tests/FieldMergeServerHTTPTests/SyncArticleTests.swift"], "Article"),
        ("Sources/FieldMergeServerHTTP/Documentation.docc/FieldMergeServerHTTP.md",
         ["Tests/FieldMergeServerHTTPTests/ShutdownSignalTests.swift"], "FieldMergeServerHTTP.md"),
        ("Sources/FieldMergeServerAuth/Documentation.docc/FieldMergeServerAuth.md",
         ["Tests/FieldMergeServerHTTPTests/AuthArticleTests.swift"], "FieldMergeServerAuth.md"),
        ("Sources/FieldMergeServerPostgres/Documentation.docc/FieldMergeServerPostgres.md",
         ["Tests/FieldMergeServerPostgresTests/PostgresArticleTests.swift"], "FieldMergeServerPostgres.md"),
        ("Sources/FieldMergeServeCommand/Documentation.docc/ServingAnAppsSchema.md",
         ["Sources/fieldmerge-serve-example/main.swift"], "ServingAnAppsSchema.md"),
    ]

    /// The files of the example app whose code the README's quick start shows, in the
    /// README's order.
    static let readmeCode = ["Examples/FieldNotes/Sources/FieldNotes/Note.swift", "Examples/FieldNotes/Sources/FieldNotes/FieldNotes.swift"]

    /// The repository's root, from a file of this test target.
    static func root(_ filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static func lines(_ relativePath: String) throws -> [String] {
        let text = try String(contentsOf: root().appendingPathComponent(relativePath), encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Records an issue for each block of `document` that differs from its marked copy in
    /// `testFiles`, for an import those files lack, and for a count that differs.
    static func expectBlocksMatch(document: String, marker: String, testFiles: [String]) throws {
        let blocks = swiftBlocks(try documentLines(document))
        let files = try testFiles.map { try lines($0) }
        let fileImports = Set(files.joined().filter { $0.hasPrefix("import ") })
        let regions = files.flatMap { markedRegions($0, marker: marker) }
        let testFile = testFiles.joined(separator: " + ")
        #expect(!blocks.isEmpty, "\(document) has no swift blocks; remove it from DocSnippets.documents")
        #expect(blocks.count == regions.count, "\(document) has \(blocks.count) swift blocks, \(testFile) \(regions.count) regions")
        for (index, (block, region)) in zip(blocks, regions).enumerated() {
            for line in block where line.hasPrefix("import ") {
                #expect(fileImports.contains(line), "\(document) block \(index + 1): '\(line)' is not imported in \(testFile)")
            }
            var code = block.filter { !$0.hasPrefix("import ") }
            while code.first == "" { code.removeFirst() }
            if code != region {
                let line = zip(code, region).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(code.count, region.count)
                let documentLine = code.indices.contains(line) ? code[line] : "(end of block)"
                let copyLine = region.indices.contains(line) ? region[line] : "(end of region)"
                Issue.record("\(document) block \(index + 1), line \(line + 1) of its code: the document has '\(documentLine)', \(testFile) '\(copyLine)'")
            }
        }
    }

    /// The lines of each ```swift block, in order.
    static func swiftBlocks(_ lines: [String]) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in lines {
            if current == nil {
                if line.trimmingCharacters(in: .whitespaces) == "```swift" { current = [] }
            } else if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                blocks.append(current!)
                current = nil
            } else {
                current!.append(line)
            }
        }
        return blocks
    }

    /// The lines between each pair of `// <marker> block begin` and `… end`, less their
    /// common indentation.
    static func markedRegions(_ lines: [String], marker: String) -> [[String]] {
        var regions: [[String]] = []
        var current: [String]?
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "// \(marker) block begin" {
                current = []
            } else if trimmed == "// \(marker) block end", let region = current {
                let indent = region.filter { !$0.isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
                regions.append(region.map { $0.isEmpty ? $0 : String($0.dropFirst(indent)) })
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        return regions
    }
}

/// Every document of the repository that has Swift blocks: the README, Specs/ and the DocC
/// catalogs. Each must be in ``DocSnippets/documents``, and each listed one must match.
@Suite struct DocSnippetCoverageTests {
    @Test func everyDocumentWithSwiftBlocks_isListed() throws {
        let root = DocSnippets.root()
        var documents = ["README.md"]
        let files = FileManager.default
        for name in try files.contentsOfDirectory(atPath: root.appendingPathComponent("Specs").path) where name.hasSuffix(".md") {
            documents.append("Specs/" + name)
        }
        for module in try files.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path) {
            let catalog = "Sources/\(module)/Documentation.docc"
            guard let names = try? files.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path) else { continue }
            documents += names.filter { $0.hasSuffix(".md") }.map { "\(catalog)/\($0)" }
        }
        #expect(documents.count > 6, "found only \(documents)")
        let listed = Set(DocSnippets.documents.map(\.document))
        for document in documents where !DocSnippets.swiftBlocks(try DocSnippets.lines(document)).isEmpty {
            #expect(listed.contains(document), "\(document) has swift blocks that no test runs: add it to DocSnippets.documents")
        }
    }

    @Test(arguments: DocSnippets.documents.map(\.document))
    func blocks_areTheCodeTheTestsRun(_ document: String) throws {
        let entry = try #require(DocSnippets.documents.first { $0.document == document })
        try DocSnippets.expectBlocksMatch(document: entry.document, marker: entry.marker, testFiles: entry.testFiles)
    }
}
