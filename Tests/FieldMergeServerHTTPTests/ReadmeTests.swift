import Foundation
import Testing

/// The README is the front page: its first screen gives the two commands (the main job on
/// its embedded defaults, and the tests), and its Swift blocks are the code of the
/// `Examples/FieldNotes` app (``DocSnippets`` compares them; CI builds and runs the app).
@Suite struct ReadmeTests {
    @Test func firstBlock_isTheTwoCommands() throws {
        let lines = try DocSnippets.lines("README.md")
        let start = try #require(lines.firstIndex(of: "```sh"))
        #expect(start < 10, "the commands come first, before line \(start + 1)")
        let block = lines[(start + 1)...].prefix { $0 != "```" }
        let commands = block.map { $0.split(separator: "#")[0].trimmingCharacters(in: .whitespaces) }
        #expect(commands == ["swift run -c release fieldmerge simulate", "Scripts/with-postgres swift test"])
        let ci = try String(contentsOf: DocSnippets.root().appendingPathComponent(".ci/run"), encoding: .utf8)
        // CI runs it under Scripts/watchdog, which stops a run that stalls.
        let unwrapped = ci.replacing(#/Scripts/watchdog --minutes [0-9]+ -- /#, with: "")
        #expect(unwrapped.contains("Scripts/with-postgres swift test"), "CI runs the README's test command")
    }

    @Test func swiftBlocks_areTheExamplesCode() throws {
        try DocSnippets.expectBlocksMatch(document: "README.md", marker: "README", testFiles: DocSnippets.readmeCode)
        #expect(DocSnippets.swiftBlocks(try DocSnippets.lines("README.md")).count == 5, "README.md's swift blocks changed; update this test and Examples/FieldNotes")
        let ci = try String(contentsOf: DocSnippets.root().appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("Examples/FieldNotes"), "CI builds and runs the example the README shows")
    }
}
