/// Reads a Server-Sent Events stream (the `text/event-stream` format of the WHATWG HTML
/// standard, "Server-sent events") as its bytes arrive, in chunks cut anywhere.
///
/// It follows the standard's rules: lines end in LF, CRLF or CR (a CR ending one chunk and
/// an LF starting the next are one line end); a line starting with `:` is a comment; a line
/// without a colon is a field with an empty value; one space after the colon is dropped;
/// `data` lines join with LF; an `id` containing NUL is ignored; `retry` sets
/// ``retry``; other fields are ignored; a UTF-8 BOM at the very start is skipped; a blank
/// line ends a message, and a message without any `data` line is not dispatched. The
/// `event` and `id` values are read as UTF-8, invalid bytes replaced; data stays bytes.
///
/// Memory is bounded: a line or a message's data longer than ``maxBytes`` throws
/// ``WireError/Code/tooLarge``, so a peer that never ends a line cannot fill memory.
/// Consumption is O(*n*) in the bytes fed, however they are chunked.
///
/// ```swift
/// var parser = ServerSentEventParser()
/// for chunk in chunks {
///     for message in try parser.feed(chunk) { handle(message.type, message.data) }
/// }
/// parser.finish()  // the stream ended: an unfinished message is dropped
/// ```
public struct ServerSentEventParser: Sendable {
    /// One dispatched message.
    public struct Message: Sendable, Equatable {
        /// The `event` field, or `message` when the message had none (or an empty one).
        public var type: String
        /// The stream's last event ID when the message was dispatched: the last `id` field
        /// so far, in this message or an earlier one (as a browser's `lastEventId`), or nil
        /// when none was given or the last one was empty.
        public var id: String?
        /// The `data` lines, joined by LF (0x0A), without a final line end.
        public var data: [UInt8]

        public init(type: String = "message", id: String? = nil, data: [UInt8]) {
            self.type = type
            self.id = id
            self.data = data
        }
    }

    /// The longest line, and the longest data of one message, taken, in bytes.
    public let maxBytes: Int
    /// The last event ID so far (see ``Message/id``).
    public private(set) var lastEventID: String?
    /// The reconnection delay the server asked for with its last valid `retry` field (an
    /// integer of milliseconds), or nil when it sent none.
    public private(set) var retry: Duration?

    /// The bytes of the line not ended yet (from earlier chunks).
    private var line: [UInt8] = []
    /// The message's data so far: each `data` line's value followed by LF.
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType = ""
    /// The previous chunk ended in CR: an LF starting the next one ends nothing more.
    private var skipLineFeed = false
    /// The first bytes of the stream while they could still be the start of a BOM; nil
    /// once the start is decided.
    private var head: [UInt8]? = []
    /// Bytes of the stream consumed before the current chunk, and where the pending line
    /// started (for error offsets).
    private var consumed = 0
    private var lineStart = 0

    /// - Parameter maxBytes: The longest line and the longest data of one message taken
    ///   (64 MiB by default); past it ``feed(_:)`` throws ``WireError/Code/tooLarge``.
    public init(maxBytes: Int = 64 << 20) {
        precondition(maxBytes >= 0, "maxBytes must not be negative")
        self.maxBytes = maxBytes
    }

    /// Reads the next bytes of the stream and returns the messages they complete, in order.
    ///
    /// - Throws: ``WireError`` (``WireError/Code/tooLarge``, with the stream offset of the
    ///   line) when a line or a message's data passes ``maxBytes``. The parser is then in
    ///   an unspecified state: the stream should be abandoned.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(WireError) -> [Message] {
        if head != nil {
            var all = head! + Array(bytes)
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            if all.count < bom.count, all.elementsEqual(bom.prefix(all.count)) {
                head = all
                return []
            }
            head = nil
            if all.starts(with: bom) {
                all.removeFirst(bom.count)
                consumed += bom.count
                lineStart = consumed
            }
            return try feedContiguous(all)
        }
        let outcome = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(WireError) in try self.scan(buffer) }
        }
        if let outcome { return try outcome.get() }
        return try feedContiguous(Array(bytes))
    }

    /// Ends the stream: drops what is pending (the standard dispatches only messages ended
    /// by a blank line) and starts over for a new stream, keeping ``lastEventID`` and
    /// ``retry`` (what a browser keeps when it reconnects).
    ///
    /// - Returns: Whether something was dropped: an unended line or an undispatched message.
    @discardableResult
    public mutating func finish() -> Bool {
        let dropped = !line.isEmpty || hasData || !eventType.isEmpty || !(head?.isEmpty ?? true)
        line = []
        data = []
        hasData = false
        eventType = ""
        skipLineFeed = false
        head = []
        consumed = 0
        lineStart = 0
        return dropped
    }

    private mutating func feedContiguous(_ bytes: [UInt8]) throws(WireError) -> [Message] {
        try bytes.withUnsafeBufferPointer { buffer in Result { () throws(WireError) in try self.scan(buffer) } }.get()
    }

    /// Splits `chunk` into lines and processes each; keeps an unended tail for later.
    private mutating func scan(_ chunk: UnsafeBufferPointer<UInt8>) throws(WireError) -> [Message] {
        var messages: [Message] = []
        var index = 0
        if skipLineFeed, !chunk.isEmpty {
            skipLineFeed = false
            if chunk[0] == 0x0A {
                index = 1
                lineStart = consumed + 1
            }
        }
        while index < chunk.count {
            var end = index
            while end < chunk.count, chunk[end] != 0x0A, chunk[end] != 0x0D { end += 1 }
            let pendingLength = line.count + (end - index)
            if pendingLength > maxBytes {
                throw WireError(.tooLarge, "an event stream line longer than \(maxBytes) bytes", offset: lineStart)
            }
            guard end < chunk.count else {
                line.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[index..<end]))
                break
            }
            if line.isEmpty {
                try process(UnsafeBufferPointer(rebasing: chunk[index..<end]), into: &messages)
            } else {
                line.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[index..<end]))
                let whole = line
                line = []
                try whole.withUnsafeBufferPointer { buffer in
                    Result { () throws(WireError) in try self.process(buffer, into: &messages) }
                }.get()
            }
            index = end + 1
            if chunk[end] == 0x0D {
                if index < chunk.count {
                    if chunk[index] == 0x0A { index += 1 }
                } else {
                    skipLineFeed = true
                }
            }
            lineStart = consumed + index
        }
        consumed += chunk.count
        return messages
    }

    /// One line, without its line end.
    private mutating func process(_ line: UnsafeBufferPointer<UInt8>, into messages: inout [Message]) throws(WireError) {
        guard let first = line.first else {
            dispatch(into: &messages)
            return
        }
        if first == 0x3A { return }  // ':' a comment
        let colon = line.firstIndex(of: 0x3A) ?? line.count
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        var valueStart = Swift.min(colon + 1, line.count)
        if valueStart < line.count, line[valueStart] == 0x20 { valueStart += 1 }
        let value = UnsafeBufferPointer(rebasing: line[valueStart...])
        if name.elementsEqual("data".utf8) {
            // The data as dispatched: what is there (its separators included) and this value.
            if data.count + value.count > maxBytes {
                throw WireError(.tooLarge, "an event's data longer than \(maxBytes) bytes", offset: lineStart)
            }
            data.append(contentsOf: value)
            data.append(0x0A)
            hasData = true
        } else if name.elementsEqual("event".utf8) {
            eventType = String(decoding: value, as: UTF8.self)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0) { lastEventID = value.isEmpty ? nil : String(decoding: value, as: UTF8.self) }
        } else if name.elementsEqual("retry".utf8) {
            if !value.isEmpty, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let milliseconds = Int(String(decoding: value, as: UTF8.self)) {
                retry = .milliseconds(milliseconds)
            }
        }
    }

    /// A blank line: the message so far is dispatched when it has data.
    private mutating func dispatch(into messages: inout [Message]) {
        defer {
            data = []
            hasData = false
            eventType = ""
        }
        guard hasData else { return }
        data.removeLast()
        messages.append(Message(type: eventType.isEmpty ? "message" : eventType, id: lastEventID, data: data))
    }
}
