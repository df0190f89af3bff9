import FieldMergeJSON
import Foundation
import Testing

private func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Data(text.utf8)) }

@Suite struct JSONWriterTests {
    @Test func doublesAreWrittenSoTheyReadBackAsDoubles() throws {
        for double in [1.0, -0.0, 0.0, 1e300, 0.1, 5e-324, -123456789012.5, 9.007199254740993e15] {
            let written = JSONValue.number(double).rendered()
            guard case .number(let read) = try parse(written) else {
                Issue.record("\(double) was written as \(written), which reads back as no double")
                continue
            }
            #expect(read.bitPattern == double.bitPattern, "\(double) -> \(written) -> \(read)")
        }
    }

    @Test func stringsEscapeOnlyQuotesBackslashesAndControlCharacters() throws {
        let string = "a\u{01}\"\\é/\n\r\t\u{08}\u{0C}\u{1F}😀\u{2028}"
        #expect(JSONValue.string(string).rendered() == #""a\u0001\"\\é/\n\r\t\b\f\u001f😀\#u{2028}""#)
        #expect(try parse(JSONValue.string(string).rendered()) == .string(string))
    }

    @Test func objectsArePrettyPrintedWithSortedKeys() {
        let value = JSONValue.object(["b": .array([.integer(1), .null, .bool(true)]), "a": .object([:]), "c": .array([])])
        #expect(value.rendered() == """
            {
              "a" : {},
              "b" : [
                1,
                null,
                true
              ],
              "c" : []
            }
            """)
    }
}
