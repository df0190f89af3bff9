import FieldMerge
import FieldMergeSQLite
import FieldMergeWorkload

/// A canonical digest of every table: SHA-256 over the rows in id order, each value tagged by
/// its SQLite type (reals by bit pattern), so equal digests mean equal data.
public struct DataDigest: Sendable, Equatable {
    /// Per entity, in schema order: the row count and the digest.
    public var tables: [(entity: String, rows: Int, sha256: String)]

    /// The whole data set's digest (of the table digests).
    public var combined: String {
        SHA256.hex(SHA256.hash(Array(tables.map { "\($0.entity):\($0.rows):\($0.sha256)" }.joined(separator: "\n").utf8)))
    }

    /// All records, over every table.
    public var rows: Int { tables.reduce(0) { $0 + $1.rows } }

    public static func == (a: DataDigest, b: DataDigest) -> Bool {
        a.tables.elementsEqual(b.tables) { $0.entity == $1.entity && $0.rows == $1.rows && $0.sha256 == $1.sha256 }
    }

    /// The entities whose tables differ from `other`'s.
    public func differences(from other: DataDigest) -> [String] {
        zip(tables, other.tables).compactMap { mine, theirs in
            mine.rows == theirs.rows && mine.sha256 == theirs.sha256 ? nil : "\(mine.entity) (\(mine.rows) rows vs \(theirs.rows))"
        }
    }

    /// Digests the app tables of `database`: the `id` column and one per field, named as in the
    /// schema (a store's and a server's tables share these columns).
    public init(_ database: Database, schema: Schema) throws {
        tables = []
        for entity in schema.entities {
            let columns = (["id"] + entity.fields.map(\.name)).map(Database.quote).joined(separator: ", ")
            let statement = try database.statement("SELECT \(columns) FROM \(Database.quote(entity.name)) ORDER BY \"id\"")
            defer { statement.reset() }
            var hasher = SHA256.Hasher()
            var line: [UInt8] = []
            var rows = 0
            let count = Int32(entity.fields.count + 1)
            while try statement.step() {
                rows += 1
                line.removeAll(keepingCapacity: true)
                for column in 0..<count {
                    switch statement.value(column) {
                    case .null: line.append(0)
                    case .integer(let v): line.append(1); append(UInt64(bitPattern: v), to: &line)
                    case .real(let v): line.append(2); append(v.bitPattern, to: &line)
                    case .text(let v): line.append(3); append(UInt64(v.utf8.count), to: &line); line += v.utf8
                    case .blob(let v): line.append(4); append(UInt64(v.count), to: &line); line += v
                    }
                }
                hasher.update(line)
            }
            tables.append((entity.name, rows, SHA256.hex(hasher.finalize())))
        }
    }
}

private func append(_ value: UInt64, to bytes: inout [UInt8]) {
    for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
}
