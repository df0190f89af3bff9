import FieldMerge

extension Workload {
    /// Digest of a state in the base format, one line per record, ids ascending:
    /// `id\ttitle\tnotes\tisCompleted\tpriority\tdueDate\tlistID\tposition\tflagged\n`
    /// (bools 1/0, integers in decimal, position as 16 lowercase hex digits of its bits).
    ///
    /// - Returns: Lowercase hex SHA-256.
    public static func digest(_ rows: [ReminderRow]) -> String {
        var out = _DigestWriter()
        for (i, row) in rows.enumerated() {
            out.integer(Int64(i) + 1); out.tab()
            out.text(row.title); out.tab()
            out.text(row.notes); out.tab()
            out.bool(row.isCompleted); out.tab()
            out.integer(row.priority); out.tab()
            out.integer(row.dueDate); out.tab()
            out.integer(row.listID); out.tab()
            out.real(row.position); out.tab()
            out.bool(row.flagged); out.newline()
        }
        return out.finish()
    }

    /// Digest of an edit list, one line per write in order: `id\tfield\tvalue\n`, values
    /// formatted as in the base format.
    ///
    /// - Returns: Lowercase hex SHA-256.
    public static func digest(_ edits: [FieldWrite]) -> String {
        var out = _DigestWriter()
        for w in edits {
            out.integer(w.id); out.tab()
            out.text(w.field.name); out.tab()
            switch w.value {
            case .text(let s): out.text(s)
            case .bool(let b): out.bool(b)
            case .integer(let v): out.integer(v)
            case .real(let d): out.real(d)
            }
            out.newline()
        }
        return out.finish()
    }
}

/// Formats digest lines into a fixed scratch buffer and feeds it to SHA-256 whenever it
/// fills, so a digest never materialises the whole text.
struct _DigestWriter: ~Copyable {
    private var hasher = SHA256.Hasher()
    private let buffer: UnsafeMutablePointer<UInt8>
    private var count = 0
    private static let capacity = 1 << 16

    init() {
        buffer = .allocate(capacity: Self.capacity)
    }

    deinit {
        buffer.deallocate()
    }

    /// Makes room for `n` more bytes (`n <= capacity`).
    @inline(__always) private mutating func reserve(_ n: Int) {
        if count &+ n > Self.capacity { flush() }
    }

    @inline(__always) private mutating func put(_ b: UInt8) {
        buffer[count] = b
        count &+= 1
    }

    @inline(__always) mutating func tab() { reserve(1); put(0x09) }

    @inline(__always) mutating func newline() { reserve(1); put(0x0A) }

    @inline(__always) mutating func bool(_ b: Bool) { reserve(1); put(b ? 0x31 : 0x30) }

    mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { bytes in
            if bytes.count > Self.capacity / 2 {
                flush()
                hasher.update(bufferPointer: UnsafeRawBufferPointer(bytes))
                return
            }
            reserve(bytes.count)
            if let src = bytes.baseAddress {
                (buffer + count).update(from: src, count: bytes.count)
            }
            count &+= bytes.count
        }
    }

    mutating func integer(_ v: Int64) {
        reserve(20)
        if v < 0 { put(0x2D) }
        var m = v.magnitude
        // Count the digits, then write them right to left.
        var digits = 1
        var probe = m
        while probe >= 10 { probe /= 10; digits &+= 1 }
        var i = count &+ digits
        count = i
        repeat {
            i &-= 1
            buffer[i] = 0x30 &+ UInt8(truncatingIfNeeded: m % 10)
            m /= 10
        } while m != 0
    }

    mutating func real(_ d: Double) {
        reserve(16)
        let bits = d.bitPattern
        for j in 0..<16 {
            buffer[count &+ j] = _hexDigit(UInt8(truncatingIfNeeded: (bits &>> UInt64(60 &- 4 &* j)) & 15))
        }
        count &+= 16
    }

    mutating func flush() {
        hasher.update(bufferPointer: UnsafeRawBufferPointer(start: buffer, count: count))
        count = 0
    }

    consuming func finish() -> String {
        flush()
        return SHA256.hex(hasher.finalize())
    }
}
