/// A single-pass JSON reader over raw bytes: no tree, no Foundation. The typed document
/// readers (`WireDecoder+Document.swift`, `WireDecoder+Values.swift`) drive it token by
/// token; every error carries the byte offset where it was found.
struct _Parser: ~Copyable {
    let input: UnsafePointer<UInt8>
    let end: Int
    var position = 0
    /// Open arrays and objects.
    var depth = 0
    let maxDepth: Int
    /// Where strings with escapes are decoded (valid until the next string is read).
    var scratch: UnsafeMutablePointer<UInt8>
    var scratchCapacity: Int

    init(_ bytes: UnsafeRawBufferPointer, limits: WireLimits) {
        scratchCapacity = 256
        scratch = .allocate(capacity: scratchCapacity)
        input = bytes.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(scratch)
        end = bytes.count
        maxDepth = limits.maxDepth
    }

    deinit { scratch.deallocate() }

    // MARK: Errors

    func error(_ code: WireError.Code, _ message: String, at offset: Int) -> WireError {
        WireError(code, message, offset: offset)
    }

    /// The error for a value of the wrong kind at `position`, or for what is no value at all.
    func typeError(expected: String) -> WireError {
        guard position < end else { return truncated() }
        let got: String
        switch input[position] {
        case UInt8(ascii: "{"): got = "an object"
        case UInt8(ascii: "["): got = "an array"
        case UInt8(ascii: "\""): got = "a string"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): got = "a number"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): got = "a bool"
        case UInt8(ascii: "n"): got = "null"
        default: return unexpectedCharacter()
        }
        return error(.unexpectedType, "expected \(expected), got \(got)", at: position)
    }

    func truncated() -> WireError {
        error(.malformedJSON, "unexpected end of input", at: end)
    }

    func unexpectedCharacter(expecting: String? = nil) -> WireError {
        guard position < end else { return truncated() }
        let byte = input[position]
        let shown = byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        return error(.malformedJSON, "unexpected \(shown)" + (expecting.map { ", expected \($0)" } ?? ""), at: position)
    }

    // MARK: Structure

    @inline(__always)
    mutating func skipSpace() {
        while position < end {
            let byte = input[position]
            guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position &+= 1
        }
    }

    /// The byte at `position` after whitespace; the input must not end here.
    @inline(__always)
    mutating func peek() throws(WireError) -> UInt8 {
        skipSpace()
        guard position < end else { throw truncated() }
        return input[position]
    }

    /// Opens an object or array (`open` is `{` or `[`) and reports whether it is empty (in
    /// which case it is closed again).
    @inline(__always)
    mutating func open(_ open: UInt8, _ what: String) throws(WireError) -> Bool {
        guard try peek() == open else { throw typeError(expected: what) }
        depth &+= 1
        guard depth <= maxDepth else {
            throw error(.tooDeep, "nesting deeper than \(maxDepth)", at: position)
        }
        position &+= 1
        skipSpace()
        if position < end && input[position] == open &+ 2 {  // `}` or `]`
            position &+= 1
            depth &-= 1
            return false
        }
        return true
    }

    /// After a member or element: `true` at a `,` (another follows), `false` at the
    /// closing `close`, which closes the container.
    @inline(__always)
    mutating func next(_ close: UInt8) throws(WireError) -> Bool {
        let byte = try peek()
        position &+= 1
        if byte == UInt8(ascii: ",") { return true }
        if byte == close { depth &-= 1; return false }
        position &-= 1
        throw unexpectedCharacter(expecting: close == UInt8(ascii: "}") ? "',' or '}'" : "',' or ']'")
    }

    /// Reads an object key and its colon.
    @inline(__always)
    mutating func key() throws(WireError) -> _Span {
        guard try peek() == UInt8(ascii: "\"") else { throw unexpectedCharacter(expecting: "a key string") }
        let span = try string()
        if _fastPath(position < end && input[position] == UInt8(ascii: ":")) {
            position &+= 1
        } else {
            guard try peek() == UInt8(ascii: ":") else { throw unexpectedCharacter(expecting: "':'") }
            position &+= 1
        }
        return span
    }

    /// Requires the end of input (whitespace aside) after the document.
    mutating func finish() throws(WireError) {
        skipSpace()
        guard position == end else {
            throw error(.malformedJSON, "unexpected data after the document", at: position)
        }
    }

    @inline(__always)
    mutating func literal(_ text: StaticString) throws(WireError) {
        let length = text.utf8CodeUnitCount
        guard length <= end &- position, memoryEqual(input + position, text.utf8Start, length) else {
            throw unexpectedCharacter()
        }
        position &+= length
    }

    /// `true` or `false`.
    @inline(__always)
    mutating func bool(_ what: String) throws(WireError) -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        default: throw typeError(expected: what)
        }
    }

    /// Consumes `null` if it comes next.
    @inline(__always)
    mutating func null() throws(WireError) -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    // MARK: Skipping

    /// Checks and skips one value of any kind (unknown keys), without recursion.
    mutating func skipValue() throws(WireError) {
        let baseDepth = depth
        var closers: [UInt8] = []
        while true {
            // A value.
            switch try peek() {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let opener = input[position]
                if try open(opener, "a value") {
                    closers.append(opener &+ 2)
                    if opener == UInt8(ascii: "{") { _ = try key() }
                    continue
                }
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool("a value")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try scanNumber()
            default: throw unexpectedCharacter(expecting: "a value")
            }
            // Close what ends here; stop at the next element or member.
            while depth > baseDepth {
                let close = closers[closers.count - 1]
                if try next(close) {
                    if close == UInt8(ascii: "}") { _ = try key() }
                    break
                }
                closers.removeLast()
            }
            if depth == baseDepth { return }
        }
    }
}

/// The bytes of a string's content, in the input (no escapes) or in the parser's scratch
/// buffer (valid until the next string is read).
struct _Span {
    let start: UnsafePointer<UInt8>
    let count: Int
    /// Where the string's opening quote is.
    let offset: Int

    @inline(__always)
    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }

    @inline(__always)
    func equals(_ text: StaticString) -> Bool {
        count == text.utf8CodeUnitCount && memoryEqual(start, text.utf8Start, count)
    }

    var text: String { String(decoding: buffer, as: UTF8.self) }
}
