import FieldMerge
import FieldMergeJSON
import FieldMergeTestSupport
import Foundation
import Testing

/// The parse error of `text`, or nil if it parses.
private func parseError(_ text: String) -> DocumentError? {
    parseError(Data(text.utf8))
}

private func parseError(_ data: Data) -> DocumentError? {
    do {
        _ = try JSONValue.parse(data)
        return nil
    } catch {
        return error
    }
}

private func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Data(text.utf8)) }

/// The local priority (an integer field) of the base merge document, written as `literal`.
private func localPriorityError(_ literal: String) -> DocumentError? {
    documentError(mergeDocumentText(priority: literal))
}

@Suite struct StrictJSONTests {
    @Test func duplicateKeysAreRejectedWithTheirPathAndPlace() throws {
        let error = try #require(localPriorityError("2, \"priority\": 5"))
        #expect(error.path == "$.local.values.priority")
        #expect(error.message.contains("duplicate key 'priority'"), "\(error.message)")
        // The document's line 8 holds the local values; the second "priority" is the duplicate.
        let line = mergeDocumentText(priority: "2, \"priority\": 5").split(separator: "\n", omittingEmptySubsequences: false)[7]
        let first = try #require(line.range(of: "\"priority\": 2, "))
        let column = line.distance(from: line.startIndex, to: first.upperBound) + 1
        #expect(error.message.contains("line 8, column \(column):"), "\(error.message)")
        let topLevel = try #require(parseError("{\"a\": 1, \"b\": 2, \"a\": 1}"))
        #expect(topLevel.path == "$.a" && topLevel.message.contains("duplicate key 'a'"))
        // The same key in different objects is fine.
        #expect(parseError("{\"a\": {\"a\": 1}, \"b\": [{\"a\": 1}, {\"a\": 2}]}") == nil)
    }

    @Test func negativeZeroStaysADoubleApartFromIntegerZero() throws {
        guard case .number(let zero) = try parse("-0.0") else {
            Issue.record("-0.0 is not read as a double")
            return
        }
        #expect(zero == 0 && zero.sign == .minus)
        #expect(try parse("0") == .integer(0) && parse("-0") == .integer(0))
        guard case .number(let exponent) = try parse("-0e0") else {
            Issue.record("-0e0 is not read as a double")
            return
        }
        #expect(exponent.sign == .minus)

        // Through a document: a real field keeps the sign, and writing it reads back the same.
        let real = try RecordDocument.decodeValue(parse("-0.0"), type: .real, path: "$")
        #expect(real == .real(-0.0) && real != .real(0.0))
        let written = RecordDocument.encodeValue(real).rendered()
        #expect(written == "-0.0")
        #expect(try RecordDocument.decodeValue(parse(written), type: .real, path: "$") == .real(-0.0))
    }

    @Test(arguments: ["1.0", "1e2", "1E2", "-3.5", "9223372036854775808", "-9223372036854775809"])
    func integerFieldsTakeJSONIntegersOnly(_ literal: String) throws {
        let error = try #require(localPriorityError(literal), "\(literal) was accepted for an integer field")
        #expect(error.path == "$.local.values.priority")
        #expect(error.message.contains("expected integer or null, got the number"), "\(error.message)")
        #expect(error.message.contains("only a JSON integer"), "\(error.message)")
    }

    @Test func integersKeepEverySixtyFourBitValueAndRealsTakeAnyNumber() throws {
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("-9223372036854775808") == .integer(.min))
        #expect(try parse("9223372036854775808") == .number(9223372036854775808))
        #expect(try RecordDocument.decodeValue(parse("1e2"), type: .real, path: "$") == .real(100))
        #expect(try RecordDocument.decodeValue(parse("7"), type: .real, path: "$") == .real(7))
        #expect(try RecordDocument.decodeValue(parse("-0"), type: .integer, path: "$") == .integer(0))
    }

    @Test func aNumberBeyondADoubleIsAClearError() throws {
        let error = try #require(localPriorityError("1e400"))
        #expect(error.path == "$.local.values.priority")
        #expect(error.message.contains("the number 1e400 is beyond the range of a 64-bit double"), "\(error.message)")
        #expect(error.message.contains("line 8, column "), "\(error.message)")
        #expect(parseError("-1e400")?.message.contains("beyond the range") == true)
        // Underflow rounds to zero, as every double parser does.
        #expect(try parse("1e-400") == .number(0))
    }

    @Test func aLoneSurrogateIsAClearError() throws {
        for escape in ["\\ud800", "\\udc00", "\\ud800x", "\\ud800\\u0041"] {
            let error = try #require(parseError("{\"title\": \"a\(escape)\"}"), "\(escape) was accepted")
            #expect(error.path == "$.title")
            #expect(error.message.contains("lone surrogate \\u"), "\(error.message)")
            #expect(error.message.contains("line 1, column 13:"), "\(error.message)")
        }
        #expect(try parse("\"\\ud83d\\ude00 \\u00e9\\n\\\"\\/\"") == .string("😀 é\n\"/"))
    }

    @Test func everyParseErrorNamesLineAndColumn() throws {
        let cases: [(text: String, path: String, place: String, message: String)] = [
            ("{\n  \"a\": [1,\n  2,, 3]\n}", "$.a[2]", "line 3, column 5", "unexpected ',', expected a value"),
            ("{\"é\": x}", "$.é", "line 1, column 7", "unexpected 'x'"),
            ("[1, 2] 3", "$", "line 1, column 8", "unexpected text after the document"),
            ("{\"a\" 1}", "$", "line 1, column 6", "expected ':' after a key"),
            ("{\"a\": 01}", "$.a", "line 1, column 7", "leading zero"),
            ("{\"a\": \"x\ty\"}", "$.a", "line 1, column 9", "control character U+0009"),
            ("[\"abc", "$[0]", "line 1, column 2", "a string that never ends"),
            ("[tru]", "$[0]", "line 1, column 2", "expected a value"),
            ("{\"a\": 1.}", "$.a", "line 1, column 9", "a digit after '.'"),
            ("{\"a\": \"\\q\"}", "$.a", "line 1, column 8", "unknown escape '\\q'"),
            ("", "$", "line 1, column 1", "unexpected end of input"),
            ("\n\n  {\"a\": [true, nul]}", "$.a[1]", "line 3, column 16", "expected a value"),
        ]
        for item in cases {
            let error = try #require(parseError(item.text), "\(item.text) was accepted")
            #expect(error.path == item.path, "\(item.text): \(error)")
            #expect(error.message.hasPrefix("malformed JSON at \(item.place): "), "\(item.text): \(error)")
            #expect(error.message.contains(item.message), "\(item.text): \(error)")
            #expect(!error.message.contains("Dictionary") && !error.message.contains("Swift."), "\(error)")
        }
    }

    @Test func invalidUTF8AndDeepNestingAreErrorsNotCrashes() throws {
        let invalid = try #require(parseError(Data([0x5B, 0x22, 0x61, 0xC3, 0x28, 0x22, 0x5D])))  // ["a\xC3("]
        #expect(invalid.path == "$[0]" && invalid.message.contains("not valid UTF-8"), "\(invalid)")
        let deep = try #require(parseError(String(repeating: "[", count: 100_000)))
        #expect(deep.message.contains("nested deeper than 512"), "\(deep.message)")
        #expect(try parse(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)) != .null)
    }

    /// Every vector survives writing and reading back unchanged.
    @Test func vectorsRoundTripThroughTheWriter() throws {
        #expect(conformanceVectorFiles.count >= minimumVectorCount)
        for file in conformanceVectorFiles {
            let (document, _) = try loadVector(file)
            #expect(try JSONValue.parse(Data(document.rendered().utf8)) == document, "\(file)")
        }
    }
}
