/// The deterministic benchmark workload (Specs/benchmarks.md, "The workload"): a base state of
/// N `reminders` rows and two independent replicas' field edits.
public struct Workload: Sendable {
    /// Record count N.
    public let records: Int
    /// Edit fraction p.
    public let editFraction: Double
    /// Fields per edited record f.
    public let fieldsPerEdit: Int
    /// Seed s.
    public let seed: UInt64

    /// The base state; record `i` has id `i + 1`.
    public let base: [ReminderRow]
    /// Replica A's writes (stream `SplitMix64(s + 1)`), in write-index order.
    public let editsA: [FieldWrite]
    /// Replica B's writes (stream `SplitMix64(s + 2)`), in write-index order.
    public let editsB: [FieldWrite]

    /// Generates the workload exactly as specified.
    ///
    /// - Parameters:
    ///   - n: Record count N (≥ 0).
    ///   - p: Edit fraction; k = floor(N · p + 0.5) records are edited per replica.
    ///   - f: Fields per edited record, 0…8.
    ///   - seed: The seed s.
    /// - Complexity: O(N).
    public static func generate(
        records n: Int, editFraction p: Double = 0.1, fieldsPerEdit f: Int = 2, seed: UInt64 = 42
    ) -> Workload {
        precondition(n >= 0, "negative record count")
        precondition((0...8).contains(f), "fieldsPerEdit must be in 0...8")
        let base = _generateBase(n, seed: seed)
        // k = floor(N * p + 0.5); the operand is non-negative, so truncation is floor
        // (and needs no libm).
        let kDouble = Double(n) * p + 0.5
        precondition(kDouble >= 0 && kDouble < Double(n) + 1, "edit fraction gives k outside 0...N")
        let k = Int(kDouble)
        let a = _generateEdits(base: base, k: k, f: f, seed: seed &+ 1)
        let b = _generateEdits(base: base, k: k, f: f, seed: seed &+ 2)
        return Workload(records: n, editFraction: p, fieldsPerEdit: f, seed: seed,
                        base: base, editsA: a, editsB: b)
    }

    /// The base with `edits` applied in order (a replica's state).
    public func applying(_ edits: [FieldWrite]) -> [ReminderRow] {
        var rows = base
        for w in edits { rows[w.record][w.field] = w.value }
        return rows
    }

    /// The reference merge `later_write_then_b`: each write is stamped
    /// `base_time + 1 + write_index`; per field the larger stamp wins, ties go to B,
    /// and a field written by one side only takes that side's value.
    public func mergedLaterWriteThenB() -> [ReminderRow] {
        var rows = base
        var stampA: [Int: Int] = [:]
        stampA.reserveCapacity(editsA.count)
        for (i, w) in editsA.enumerated() {
            rows[w.record][w.field] = w.value
            stampA[w.record &* 8 &+ w.field.rawValue] = i
        }
        for (i, w) in editsB.enumerated() {
            if let ia = stampA[w.record &* 8 &+ w.field.rawValue], ia > i { continue }
            rows[w.record][w.field] = w.value
        }
        return rows
    }

    /// Records edited by both replicas, and (record, field) pairs written by both.
    public func bothEditedStats() -> (records: Int, fields: Int) {
        let recordsA = Set(editsA.lazy.map(\.record))
        let pairsA = Set(editsA.lazy.map { $0.record &* 8 &+ $0.field.rawValue })
        let recordsB = Set(editsB.lazy.map(\.record))
        let pairsB = Set(editsB.lazy.map { $0.record &* 8 &+ $0.field.rawValue })
        return (recordsA.intersection(recordsB).count, pairsA.intersection(pairsB).count)
    }
}

// MARK: - Generation

extension Workload {
    static let _baseDue: UInt64 = 1_700_000_000
    static let _dueSpan: UInt64 = 31_536_000

    static func _generateBase(_ n: Int, seed: UInt64) -> [ReminderRow] {
        var rng = SplitMix64(seed: seed)
        var rows: [ReminderRow] = []
        rows.reserveCapacity(n)
        for _ in 0..<n {
            let title = _string(24, &rng)
            let notes = _string(64, &rng)
            let isCompleted = (rng.next() & 1) == 1
            let priority = Int64(rng.next() % 4)
            let dueDate = Int64(_baseDue + rng.next() % _dueSpan)
            let listID = Int64(1 + rng.next() % 50)
            let position = _unitDouble(&rng)
            let flagged = (rng.next() & 1) == 1
            rows.append(ReminderRow(
                title: title, notes: notes, isCompleted: isCompleted, priority: priority,
                dueDate: dueDate, listID: listID, position: position, flagged: flagged))
        }
        return rows
    }

    static func _generateEdits(base: [ReminderRow], k: Int, f: Int, seed: UInt64) -> [FieldWrite] {
        var rng = SplitMix64(seed: seed)
        let n = base.count
        // Partial Fisher–Yates over record indices: all k draws first.
        var idx = Array(0..<n)
        for i in 0..<k {
            let j = i + Int(rng.below(UInt64(n - i)))
            idx.swapAt(i, j)
        }
        var writes: [FieldWrite] = []
        writes.reserveCapacity(k * f)
        for r in idx[0..<k] {
            var perm: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 1, 2, 3, 4, 5, 6, 7)
            withUnsafeMutableBytes(of: &perm) { raw in
                let p = raw.bindMemory(to: Int.self)
                for i in 0..<f {
                    let j = i + Int(rng.below(UInt64(8 - i)))
                    p.swapAt(i, j)
                }
            }
            let old = base[r]
            for i in 0..<f {
                let fieldIndex = withUnsafeBytes(of: perm) { $0.load(fromByteOffset: i * MemoryLayout<Int>.stride, as: Int.self) }
                let field = ReminderField(rawValue: fieldIndex)!
                let value: ReminderValue
                switch field {
                case .title: value = .text(_string(24, &rng))
                case .notes: value = .text(_string(64, &rng))
                case .isCompleted: value = .bool(!old.isCompleted)
                case .flagged: value = .bool(!old.flagged)
                case .priority:
                    value = .integer(Int64((UInt64(old.priority) &+ 1 &+ rng.below(3)) % 4))
                case .dueDate:
                    value = .integer(Int64(_baseDue + rng.next() % _dueSpan))
                case .listID:
                    value = .integer(Int64(1 + ((UInt64(old.listID) &- 1) &+ 1 &+ rng.below(49)) % 50))
                case .position:
                    value = .real(_unitDouble(&rng))
                }
                writes.append(FieldWrite(record: r, field: field, value: value))
            }
        }
        return writes
    }

    /// `Double(next() >> 11) * 2^-53`.
    @inline(__always)
    static func _unitDouble(_ rng: inout SplitMix64) -> Double {
        Double(rng.next() &>> 11) * 0x1p-53
    }

    /// `string(L)`: ceil(L/10) draws, 10 alphabet characters per draw, cut to L.
    static func _string(_ length: Int, _ rng: inout SplitMix64) -> String {
        String(unsafeUninitializedCapacity: length) { out in
            var i = 0
            while i < length {
                var x = rng.next()
                let end = Swift.min(i + 10, length)
                while i < end {
                    out[i] = _alphabet[Int(x & 63)]
                    x &>>= 6
                    i += 1
                }
            }
            return length
        }
    }
}

/// `abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -` as bytes.
private let _alphabet: [UInt8] = Array(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -".utf8)
