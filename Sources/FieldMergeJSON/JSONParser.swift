/// A strict reader of JSON text (RFC 8259) into ``JSONValue``.
///
/// Stricter than the grammar requires where a lenient reader would change data silently:
/// duplicate keys in an object, invalid UTF-8, lone UTF-16 surrogates in `\u` escapes and
/// numbers beyond a double's range are errors. A number without fraction and exponent is an
/// ``JSONValue/integer(_:)`` when it fits 64 bits (`-0` is the integer 0); any other number
/// is a ``JSONValue/number(_:)``, so `-0.0` stays a negative zero and `1.0` is not an integer.
/// Every error names the line and column (counted in Unicode scalars, both from 1) and the
/// JSON path of the value being read.
struct JSONParser {
    /// Objects and arrays nested deeper than this are an error, not a stack overflow.
    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    private var depth = 0

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Parses one JSON document filling all of `bytes` (surrounding whitespace allowed).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(DocumentError) -> JSONValue {
        var parser = JSONParser(bytes)
        do throws(Failure) {
            parser.skipWhitespace()
            let value = try parser.value()
            parser.skipWhitespace()
            guard parser.position == bytes.count else {
                throw Failure(offset: parser.position, message: "unexpected text after the document")
            }
            return value
        } catch {
            throw error.documentError(in: bytes)
        }
    }

    // MARK: Values

    private mutating func value() throws(Failure) -> JSONValue {
        guard position < bytes.count else { throw Failure(offset: position, message: "unexpected end of input, expected a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw Failure(offset: position, message: "unexpected \(describe(at: position)), expected a value")
        }
    }

    private mutating func object() throws(Failure) -> JSONValue {
        var members: [String: JSONValue] = [:]
        try elements(closer: UInt8(ascii: "}")) { (parser) throws(Failure) in
            guard parser.peek(UInt8(ascii: "\"")) else {
                throw Failure(offset: parser.position, message: "unexpected \(parser.describe(at: parser.position)), expected a key in quotes")
            }
            let keyOffset = parser.position
            let key = try parser.string()
            parser.skipWhitespace()
            try parser.expect(UInt8(ascii: ":"), "':' after a key")
            parser.skipWhitespace()
            let member: JSONValue
            do throws(Failure) {
                member = try parser.value()
            } catch {
                throw error.inside(.key(key))
            }
            if members.updateValue(member, forKey: key) != nil {
                throw Failure(offset: keyOffset, message: "duplicate key '\(key)' in an object", path: [.key(key)])
            }
        }
        return .object(members)
    }

    private mutating func array() throws(Failure) -> JSONValue {
        var items: [JSONValue] = []
        try elements(closer: UInt8(ascii: "]")) { (parser) throws(Failure) in
            do throws(Failure) {
                items.append(try parser.value())
            } catch {
                throw error.inside(.index(items.count))
            }
        }
        return .array(items)
    }

    /// Reads an array's or object's elements, from the opening bracket at `position` to
    /// `closer`: `element` reads each one, this reads the commas and whitespace between.
    private mutating func elements(closer: UInt8, _ element: (inout JSONParser) throws(Failure) -> Void) throws(Failure) {
        try enter()
        position += 1
        skipWhitespace()
        if !peek(closer) {
            while true {
                try element(&self)
                skipWhitespace()
                guard peek(UInt8(ascii: ",")) else { break }
                position += 1
                skipWhitespace()
            }
            guard peek(closer) else {
                throw Failure(
                    offset: position,
                    message: "unexpected \(describe(at: position)), expected ',' or '\(Character(Unicode.Scalar(closer)))'")
            }
        }
        position += 1
        depth -= 1
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw Failure(offset: position, message: "nested deeper than \(Self.maximumDepth) arrays and objects")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
            (0..<count).allSatisfy({ bytes[position + $0] == word.utf8Start[$0] })
        else {
            throw Failure(offset: position, message: "unexpected \(describe(at: position)), expected a value")
        }
        position += count
    }

    // MARK: Numbers

    private mutating func number() throws(Failure) -> JSONValue {
        let start = position
        let negative = peek(UInt8(ascii: "-"))
        if negative { position += 1 }
        // Integer part: 0, or a digit 1-9 and more digits; accumulated as a negative
        // number, whose range includes Int64.min.
        guard position < bytes.count, isDigit(bytes[position]) else {
            throw Failure(offset: position, message: "a number needs a digit after '-'")
        }
        var magnitude: Int64 = 0
        var fits = true
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) {
                throw Failure(offset: start, message: "a number cannot have a leading zero")
            }
        } else {
            while position < bytes.count, isDigit(bytes[position]) {
                let digit = Int64(bytes[position] &- UInt8(ascii: "0"))
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.subtractingReportingOverflow(digit)
                if o1 || o2 { fits = false } else { magnitude = next }
                position += 1
            }
        }
        var isInteger = true
        if peek(UInt8(ascii: ".")) {
            isInteger = false
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw Failure(offset: position, message: "a number needs a digit after '.'")
            }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            isInteger = false
            position += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw Failure(offset: position, message: "a number needs a digit in its exponent")
            }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if isInteger, fits {
            if negative { return .integer(magnitude) }
            if magnitude != .min { return .integer(-magnitude) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            throw Failure(offset: start, message: "the number \(text) is beyond the range of a 64-bit double")
        }
        return .number(double)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    // MARK: Strings

    private mutating func string() throws(Failure) -> String {
        position += 1
        let start = position
        // Fast path: no escapes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = try validated(start..<position)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw controlCharacter(at: position) }
            position += 1
        }
        var utf8 = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw Failure(offset: start, message: "a string that is not valid UTF-8")
                }
                position += 1
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &utf8)
            case ..<0x20:
                throw controlCharacter(at: position)
            default:
                utf8.append(byte)
                position += 1
            }
        }
        throw Failure(offset: start - 1, message: "a string that never ends")
    }

    private func validated(_ range: Range<Int>) throws(Failure) -> String {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
        if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
        guard let text = String(validating: slice, as: UTF8.self) else {
            throw Failure(offset: range.lowerBound, message: "a string that is not valid UTF-8")
        }
        return text
    }

    private func controlCharacter(at offset: Int) -> Failure {
        let hex = String(bytes[offset], radix: 16, uppercase: true)
        return Failure(offset: offset, message: "control character U+\(hex.count < 2 ? "000" : "00")\(hex) in a string (write it as an escape)")
    }

    /// Reads one escape sequence (the backslash is at `position`), appending its UTF-8.
    private mutating func escape(into utf8: inout [UInt8]) throws(Failure) {
        let start = position
        position += 1
        guard position < bytes.count else { throw Failure(offset: start, message: "a string that never ends") }
        let letter = bytes[position]
        position += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(letter)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try hexUnit(escapeAt: start)
            var scalar: Unicode.Scalar?
            switch unit {
            case 0xD800...0xDBFF:
                if position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
                    let lowStart = position
                    position += 2
                    let low = try hexUnit(escapeAt: lowStart)
                    if (0xDC00...0xDFFF).contains(low) {
                        scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
                    }
                }
            case 0xDC00...0xDFFF:
                scalar = nil
            default:
                scalar = Unicode.Scalar(unit)
            }
            guard let scalar else {
                throw Failure(
                    offset: start,
                    message: "lone surrogate \\u\(String(unit, radix: 16)) in a string: a \\u escape of U+D800 to U+DFFF must be a high and low surrogate pair")
            }
            utf8.append(contentsOf: UTF8.encode(scalar)!)
        default:
            throw Failure(offset: start, message: "unknown escape '\\\(Unicode.Scalar(letter))' in a string")
        }
    }

    /// The four hex digits after `\u`.
    private mutating func hexUnit(escapeAt start: Int) throws(Failure) -> UInt16 {
        var unit: UInt16 = 0
        for _ in 0..<4 {
            guard position < bytes.count, let digit = hexDigit(bytes[position]) else {
                throw Failure(offset: start, message: "a \\u escape needs four hex digits")
            }
            unit = unit << 4 | UInt16(digit)
            position += 1
        }
        return unit
    }

    private func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    // MARK: Bytes

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private func peek(_ byte: UInt8) -> Bool { position < bytes.count && bytes[position] == byte }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(Failure) {
        guard peek(byte) else { throw Failure(offset: position, message: "unexpected \(describe(at: position)), expected \(what)") }
        position += 1
    }

    /// "end of input", or the character at `offset` quoted.
    private func describe(at offset: Int) -> String {
        guard offset < bytes.count else { return "end of input" }
        let byte = bytes[offset]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }
}

extension JSONParser {
    /// One step of a JSON path.
    enum PathComponent {
        case key(String)
        case index(Int)
    }

    /// A parse error at a byte offset; the path is collected innermost first while the
    /// error travels out of the nested values.
    struct Failure: Error {
        var offset: Int
        var message: String
        var path: [PathComponent] = []

        func inside(_ component: PathComponent) -> Failure {
            var copy = self
            copy.path.append(component)
            return copy
        }

        /// The error with its path and its line and column in `bytes`.
        func documentError(in bytes: UnsafeRawBufferPointer) -> DocumentError {
            var line = 1
            var column = 1
            for byte in bytes[..<min(offset, bytes.count)] {
                if byte == 0x0A {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    column += 1  // continuation bytes of UTF-8 do not start a character
                }
            }
            var path = "$"
            for component in self.path.reversed() {
                switch component {
                case .key(let key): path += ".\(key)"
                case .index(let index): path += "[\(index)]"
                }
            }
            return DocumentError(path: path, message: "malformed JSON at line \(line), column \(column): \(message)")
        }
    }
}
