import FieldMerge
import FieldMergeServer
import PostgresNIO

extension PostgresServerStorage {
    public nonisolated(nonsending) func row(_ entity: ServerEntity, id: Int64) async throws -> ServerRow? {
        let table = table(entity)
        guard let row = try await run(table.sql.select, Self.binds(id)).first else { return nil }
        return try Self.decodeRow(row, table, fieldRevisions: true)
    }

    public nonisolated(nonsending) func exists(_ entity: ServerEntity, id: Int64) async throws -> Bool {
        try await !run(table(entity).sql.exists, Self.binds(id)).isEmpty
    }

    public nonisolated(nonsending) func deletion(_ entity: ServerEntity, id: Int64) async throws -> Deletion? {
        guard let row = try await run(
            "SELECT \"id\", \"revision\", \"stamp\", \"root\" FROM \(named("__fm_deleted")) WHERE \"entity\" = $1 AND \"id\" = $2",
            Self.binds(entity.name, id)).first else { return nil }
        return try Self.decodeDeletion(row, entity: entity)
    }

    public nonisolated(nonsending) func forgetDeletion(_ entity: ServerEntity, id: Int64) async throws {
        windowEntities = nil
        try await run("DELETE FROM \(named("__fm_deleted")) WHERE \"entity\" = $1 AND \"id\" = $2", Self.binds(entity.name, id))
    }

    public nonisolated(nonsending) func referencing(_ id: Int64, from entity: ServerEntity, field: Int) async throws -> [Int64] {
        try await run(table(entity).referencing(field: field), Self.binds(id)).map { try $0.decode(Int64.self) }
    }

    public nonisolated(nonsending) func logRevision(after revision: Int64, offset: Int) async throws -> Int64? {
        try await scalar(
            "SELECT \"revision\" FROM \(named("__fm_log")) WHERE \"revision\" > $1 ORDER BY \"revision\" LIMIT 1 OFFSET $2",
            Self.binds(revision, Int64(offset)), as: Int64.self)
    }

    /// One round trip instead of four, and when the page will end at `latest` (no cut before
    /// it: a catch-up of a device a little behind), the same statement also reads which
    /// entities the page holds (`windowEntities`), which the first ``changes(_:after:through:)``
    /// would otherwise ask for. `CASE` evaluates that part only when it is needed, so a page
    /// cut short of `latest` never reads the log up to `latest`.
    public nonisolated(nonsending) func logBounds(after revision: Int64, limit: Int, latest: Int64) async throws -> LogBounds {
        let window = CatchUpWindow(after: revision, limit: limit, latest: latest)
        if let known = session.prefetchedBounds, known.window == window {
            session.prefetchedBounds = nil
            return known.bounds
        }
        let row = try await run(logBoundsQuery(), Self.binds(revision, Int64(limit - 1), Int64(limit), latest), prepared: true).first
        guard let row else { throw ServerError(.corrupt, "the log's bounds could not be read") }
        return try logBounds(row, window)
    }

    /// The log's bounds of a catch-up (bindings: after, limit - 1, limit, latest), with the
    /// names of the entities in the window when the page ends at `latest` (each with whether
    /// any of its entries is a deletion): one row of six columns, then `extra`'s (`r` names
    /// a `WITH` part of `parts`, which go after the bounds' own).
    func logBoundsQuery(parts: String = "", extra: String = "") -> String {
        let log = named("__fm_log")
        let entry = { (after: String, offset: String) in
            "(SELECT \"revision\" FROM \(log) WHERE \"revision\" > \(after) ORDER BY \"revision\" LIMIT 1 OFFSET \(offset))"
        }
        let whole = "b.\"first\" IS NOT NULL AND b.\"first\" <= $4 AND (b.\"cut\" IS NULL OR b.\"cut\" > $4)"
        return "WITH b AS (SELECT \(entry("$1", "0")) AS \"first\", \(entry("$1", "$2")) AS \"last\", \(entry("$1", "$3")) AS \"cut\", "
            + "\(entry("$4", "0")) AS \"afterLatest\"), w AS (\(entitiesLoggedQuery(after: "$1", through: "$4")))\(parts) "
            + "SELECT b.\"first\", b.\"last\", b.\"cut\", b.\"afterLatest\", "
            + "CASE WHEN \(whole) THEN ARRAY(SELECT \"entity\" FROM w ORDER BY \"entity\") END, "
            + "CASE WHEN \(whole) THEN ARRAY(SELECT \"deleted\" FROM w ORDER BY \"entity\") END\(extra) FROM b"
    }

    /// The bounds in the first six columns of `row` (``logBoundsQuery(parts:extra:)``); the
    /// window's entities are kept for the page's reads (``windowEntities``).
    func logBounds(_ row: PostgresRow, _ window: CatchUpWindow) throws(ServerError) -> LogBounds {
        let columns = row.makeRandomAccess()
        let (first, last, cut, afterLatest): (Int64?, Int64?, Int64?, Int64?)
        let (names, deleted): ([String]?, [Bool]?)
        do {
            (first, last, cut, afterLatest) = (
                try columns[0].decode(Int64?.self), try columns[1].decode(Int64?.self), try columns[2].decode(Int64?.self),
                try columns[3].decode(Int64?.self))
            (names, deleted) = (try columns[4].decode([String]?.self), try columns[5].decode([Bool]?.self))
        } catch {
            throw ServerError(.corrupt, "the log's bounds could not be read", cause: error)
        }
        if let names, let deleted, names.count == deleted.count {
            windowEntities = (window.after, window.latest, Dictionary(zip(names, deleted), uniquingKeysWith: { $0 || $1 }))
        }
        return LogBounds(first: first, last: last, cut: cut, afterLatest: afterLatest)
    }

    public nonisolated(nonsending) func loggedRevision(_ entity: ServerEntity, id: Int64) async throws -> Int64? {
        try await scalar(
            "SELECT \"revision\" FROM \(named("__fm_log")) WHERE \"entity\" = $1 AND \"id\" = $2",
            Self.binds(entity.name, id), as: Int64.self)
    }

    public nonisolated(nonsending) func changes(_ entity: ServerEntity, after: Int64, through: Int64) async throws -> (alive: [ServerRow], deleted: [Deletion]) {
        guard let anyDeleted = try await entitiesLogged(after: after, through: through)[entity.name] else { return ([], []) }
        let table = table(entity)
        let window = Self.binds(entity.name, after, through)
        let alive = try await run(table.changedAlive, window, prepared: true).map { row throws(ServerError) in
            try Self.decodeRow(row, table, fieldRevisions: false)
        }
        guard anyDeleted else { return (alive, []) }
        let deleted = try await run(table.changedDeleted, window, prepared: true).map { row in try Self.decodeDeletion(row, entity: entity) }
        return (alive, deleted)
    }

    /// The entities with log entries in `after...through`, each with whether any of them is
    /// a deletion, asked once per window and transaction (``windowEntities``).
    private nonisolated(nonsending) func entitiesLogged(after: Int64, through: Int64) async throws -> [String: Bool] {
        if let known = windowEntities, known.after == after, known.through == through { return known.names }
        let rows = try await run(entitiesLoggedQuery(after: "$1", through: "$2"), Self.binds(after, through), prepared: true)
        var names: [String: Bool] = [:]
        for row in rows {
            let (name, deleted) = try row.decode((String, Bool).self)
            names[name] = deleted
        }
        windowEntities = (after, through, names)
        return names
    }

    /// The entities with log entries after the revision bound at `after` through the one at
    /// `through`, each with whether any of them is a deletion (`entity`, `deleted`).
    func entitiesLoggedQuery(after: String, through: String) -> String {
        "SELECT l.\"entity\", bool_or(d.\"id\" IS NOT NULL) AS \"deleted\" FROM \(named("__fm_log")) l LEFT JOIN \(named("__fm_deleted")) d "
            + "ON d.\"entity\" = l.\"entity\" AND d.\"id\" = l.\"id\" WHERE l.\"revision\" > \(after) AND l.\"revision\" <= \(through) GROUP BY l.\"entity\""
    }

    // MARK: Values

    /// Binds a field value as its column holds it: dates as integer milliseconds, text sets
    /// as `text[]`, blobs as `bytea`.
    ///
    /// - Throws: `ServerError/Code/badRequest` for text holding U+0000.
    static func bind(_ value: Value, into binds: inout PostgresBindings) throws(ServerError) {
        switch value {
        case .null: binds.appendNull()
        case .integer(let v), .date(let v): binds.append(v)
        case .real(let v): binds.append(v)
        case .text(let v): binds.append(try storable(v))
        case .bool(let v): binds.append(v)
        case .blob(let v): binds.append(ByteBuffer(bytes: v))
        case .textSet(let v):
            for member in v { _ = try storable(member) }
            binds.append(v.elements)
        }
    }

    /// Throws what ``bind(_:into:)`` would for `value`, binding nothing.
    static func checkStorable(_ value: Value) throws(ServerError) {
        switch value {
        case .text(let v): _ = try storable(v)
        case .textSet(let v): for member in v { _ = try storable(member) }
        default: break
        }
    }

    /// `text` itself when PostgreSQL can store it. Its text type cannot hold U+0000 (SQLite's
    /// can): such a value is refused as a bad request, not as a storage failure that the
    /// client would retry for ever.
    static func storable(_ text: String) throws(ServerError) -> String {
        guard !text.utf8.contains(0) else {
            throw ServerError(.badRequest, "PostgreSQL cannot store text holding the character U+0000")
        }
        return text
    }

    /// The value of a `type` field in `cell`; nil when the column holds something else.
    static func value(_ cell: PostgresCell, as type: FieldType) -> Value? {
        guard cell.bytes != nil else { return .null }
        switch type {
        case .integer, .reference: return (try? cell.decode(Int64.self)).map(Value.integer)
        case .date: return (try? cell.decode(Int64.self)).map(Value.date)
        case .bool: return (try? cell.decode(Bool.self)).map(Value.bool)
        case .real: return (try? cell.decode(Double.self)).map(Value.real)
        case .text, .attachment: return (try? cell.decode(String.self)).map(Value.text)
        case .blob: return (try? cell.decode(ByteBuffer.self)).map { .blob(Array($0.readableBytesView)) }
        case .textSet: return (try? cell.decode([String].self)).map { .textSet(TextSet($0)) }
        }
    }

    /// A record read with the table's columns.
    static func decodeRow(_ row: PostgresRow, _ table: PostgresServerTable, fieldRevisions readFields: Bool) throws(ServerError) -> ServerRow {
        let entity = table.entity
        let cells = row.makeRandomAccess()
        let id = try decode(cells[0], as: Int64.self)
        var values = ContiguousArray<Value>()
        values.reserveCapacity(entity.fields.count)
        for (index, field) in entity.fields.enumerated() {
            guard let value = value(cells[index + 1], as: field.type) else {
                throw ServerError(.corrupt, "column \(entity.name).\(field.name) of \(id) is not \(field.type.name)")
            }
            values.append(value)
        }
        let count = entity.fields.count
        let stampBytes = try decode(cells[count + 1], as: ByteBuffer.self)
        guard let decoded = stampBytes.withUnsafeReadableBytes({ ServerRow.decodeStamps($0, count: count) }) else {
            throw ServerError(.corrupt, "the stamps of \(entity.name)#\(id) are damaged")
        }
        let revision = try decode(cells[count + 2], as: Int64.self)
        var fieldRevisions: ContiguousArray<Int64>?
        if readFields, cells[count + 4].bytes != nil {
            let bytes = try decode(cells[count + 4], as: ByteBuffer.self)
            fieldRevisions = bytes.withUnsafeReadableBytes { ServerRow.decode($0, count: count, revision: revision) }
            guard fieldRevisions != nil else {
                throw ServerError(.corrupt, "the field revisions of \(entity.name)#\(id) are damaged")
            }
        }
        return ServerRow(
            record: Record(entity: entity.name, id: id, values: values, stamps: decoded),
            revision: revision, created: try decode(cells[count + 3], as: Int64.self), fieldRevisions: fieldRevisions,
            root: cells[count + 5].bytes == nil ? nil : try decode(cells[count + 5], as: Int64.self))
    }

    /// A tombstone read as its id, revision, stamp and root.
    static func decodeDeletion(_ row: PostgresRow, entity: ServerEntity) throws -> Deletion {
        let (id, revision, stamp, root) = try row.decode((Int64, Int64, ByteBuffer, Int64?).self)
        return Deletion(id: id, revision: revision, tombstone: try tombstone(stamp, entity: entity.name, id: id), root: root)
    }

    /// The tombstone stamp in `bytes`.
    static func tombstone(_ bytes: ByteBuffer, entity: String, id: Int64) throws(ServerError) -> Stamp {
        guard let stamp = bytes.withUnsafeReadableBytes({ ServerRow.decodeStamps($0, count: 1) })?.first else {
            throw ServerError(.corrupt, "the tombstone of \(entity)#\(id) is damaged")
        }
        return stamp
    }
}
