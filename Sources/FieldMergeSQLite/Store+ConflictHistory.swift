import FieldMerge

/// A conflict a sync's merge decided, as the store keeps it.
public struct ConflictRecord: Sendable, Equatable {
    /// Its number in the history (increasing).
    public var seq: Int64
    /// When it was decided (milliseconds since the epoch, by this replica's wall clock).
    public var decidedAt: UInt64
    public var conflict: FieldConflict
}

extension Store {
    /// How many conflicts the history keeps: the oldest go when a sync adds more.
    public static let conflictHistoryLimit = 1_000

    static let conflictsTable = """
        CREATE TABLE IF NOT EXISTS "__fm_conflicts" ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "at" INTEGER NOT NULL,
          "entity" TEXT NOT NULL, "id" INTEGER NOT NULL, "kind" TEXT NOT NULL, "field" TEXT,
          "ancestor", "local", "remote", "result", "stamps" BLOB NOT NULL, "strategy" TEXT NOT NULL, "winner" TEXT NOT NULL,
          "deletedSide" TEXT, "fallback" TEXT, "edited" BLOB)
        """

    /// Creates the history table, and gives one made before `deletedSide`, `fallback` and
    /// `edited` were kept those columns.
    static func prepareConflictHistory(_ database: Database) throws(SQLiteError) {
        try database.execute(conflictsTable)
        let has = try database.scalar("SELECT count(*) FROM pragma_table_info('__fm_conflicts') WHERE name = 'fallback'")
        if has == .integer(0) {
            try database.execute("ALTER TABLE \"__fm_conflicts\" ADD COLUMN \"deletedSide\" TEXT")
            try database.execute("ALTER TABLE \"__fm_conflicts\" ADD COLUMN \"fallback\" TEXT")
        }
        let hasEdited = try database.scalar("SELECT count(*) FROM pragma_table_info('__fm_conflicts') WHERE name = 'edited'")
        if hasEdited == .integer(0) { try database.execute("ALTER TABLE \"__fm_conflicts\" ADD COLUMN \"edited\" BLOB") }
    }

    /// Keeps the conflicts of an applied response (inside its transaction), and drops the
    /// oldest past ``conflictHistoryLimit``.
    func recordConflicts(_ conflicts: [FieldConflict]) throws {
        guard !conflicts.isEmpty else { return }
        let statement = try database.statement("""
            INSERT INTO "__fm_conflicts" ("at", "entity", "id", "kind", "field", "ancestor", "local", "remote", "result",
              "stamps", "strategy", "winner", "deletedSide", "fallback", "edited") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let now = Int64(clamping: wall.milliseconds())
        for conflict in conflicts {
            defer { statement.reset() }
            try statement.bind(now, at: 1)
            try statement.bind(conflict.entity, at: 2)
            try statement.bind(conflict.id, at: 3)
            try statement.bind(conflict.kind.rawValue, at: 4)
            if let field = conflict.field { try statement.bind(field, at: 5) } else { try statement.bindNull(at: 5) }
            for (offset, value) in [conflict.ancestor, conflict.local, conflict.remote, conflict.result].enumerated() {
                if let value { try statement.bindField(value, at: Int32(6 + offset)) } else { try statement.bindNull(at: Int32(6 + offset)) }
            }
            var stamps: [UInt8] = []
            RecordCoding.encodeStamps([conflict.ancestorStamp ?? .none, conflict.localStamp, conflict.remoteStamp], into: &stamps)
            try statement.bind(stamps, at: 10)
            try statement.bind(conflict.strategy, at: 11)
            try statement.bind(conflict.winner.rawValue, at: 12)
            if let side = conflict.deletedSide { try statement.bind(side.rawValue, at: 13) } else { try statement.bindNull(at: 13) }
            if let fallback = conflict.fallback { try statement.bind(fallback.rawValue, at: 14) } else { try statement.bindNull(at: 14) }
            // A delete-versus-edit conflict keeps the edited record (values and stamps), as an ancestor is kept.
            if let edited = conflict.edited, let entity = tables[conflict.entity]?.entity,
                edited.values.count == entity.fields.count, edited.stamps.count == entity.fields.count
            {
                var bytes: [UInt8] = []
                RecordCoding.encodeAncestor(edited, revision: 0, entity: entity, into: &bytes)
                try statement.bind(bytes, at: 15)
            } else {
                try statement.bindNull(at: 15)
            }
            try statement.execute()
        }
        try database.run(
            "DELETE FROM \"__fm_conflicts\" WHERE \"seq\" <= (SELECT max(\"seq\") FROM \"__fm_conflicts\") - ?",
            [.integer(Int64(Self.conflictHistoryLimit))])
    }

    /// The conflicts syncs decided, newest first: entity, id, field, the ancestor's, this
    /// replica's and the server's values and stamps, the strategy, the winner, the time.
    public func conflictHistory(limit: Int = 100) throws(StoreError) -> [ConflictRecord] {
        try sqlite { () throws(SQLiteError) -> [ConflictRecord] in
            let statement = try database.statement("""
                SELECT "seq", "at", "entity", "id", "kind", "field", "ancestor", "local", "remote", "result", "stamps",
                  "strategy", "winner", "deletedSide", "fallback", "edited" FROM "__fm_conflicts" ORDER BY "seq" DESC LIMIT ?
                """)
            defer { statement.reset() }
            try statement.bind(Int64(max(0, limit)), at: 1)
            var records: [ConflictRecord] = []
            while try statement.step() {
                guard let record = try conflictRecord(statement) else { continue }
                records.append(record)
            }
            return records
        }
    }

    /// Undoes what a conflict's decision kept: a new local edit that puts back the value of
    /// `side` (by default the side that lost), synced like any edit.
    ///
    /// For a delete-versus-edit conflict the delete lost or the edit did: putting back the
    /// edit (the default when the delete won) re-creates the record with the edited side's
    /// values, as a local create (a new temporary id; the server gives the permanent one);
    /// putting back the delete (the default when the edit won) deletes the record.
    ///
    /// - Throws: ``StoreError/Code/recordNotFound`` for an unknown conflict or a record that
    ///   is gone; ``StoreError/Code/invalidRecord`` for a merged result with no side named, a
    ///   record to re-create that is there, or a delete-versus-edit entry recorded without
    ///   the edit's values (before they were kept).
    public func revert(conflict seq: Int64, to side: MergeWinner? = nil) throws(StoreError) {
        guard let record = try conflictHistory(limit: Int.max).first(where: { $0.seq == seq }) else {
            throw StoreError(.recordNotFound, "no conflict \(seq) in the history")
        }
        let conflict = record.conflict
        if conflict.kind == .deleteVsEdit { return try revertDelete(conflict, to: side) }
        guard let field = conflict.fieldIndex else {
            throw StoreError(.invalidRecord, "the conflict names no field to put back", entity: conflict.entity, id: conflict.id)
        }
        let chosen: MergeWinner
        switch side ?? conflict.winner {
        case .local where side == nil: chosen = .remote
        case .remote where side == nil: chosen = .local
        case .merged where side == nil:
            throw StoreError(.invalidRecord, "the kept value was merged from both sides: name the side to put back", entity: conflict.entity, id: conflict.id)
        case let named: chosen = named
        }
        let value: Value?
        switch chosen {
        case .local: value = conflict.local
        case .remote: value = conflict.remote
        case .merged: value = conflict.result
        }
        _ = try update(conflict.entity, id: conflict.id, set: [(field: field, value: value ?? .null)])
    }

    /// ``revert(conflict:to:)`` of a delete-versus-edit conflict.
    private func revertDelete(_ conflict: FieldConflict, to side: MergeWinner?) throws(StoreError) {
        let deletedSide = conflict.deletedSide ?? .remote
        let editedSide: MergeWinner = deletedSide == .local ? .remote : .local
        let putBack = side ?? (conflict.winner == deletedSide ? editedSide : deletedSide)
        let alive = try self.record(conflict.entity, id: conflict.id) != nil
        if putBack == deletedSide {
            guard alive else { throw StoreError(.recordNotFound, "the record is deleted already", entity: conflict.entity, id: conflict.id) }
            try delete(conflict.entity, id: conflict.id)
            return
        }
        guard let edited = conflict.edited else {
            throw StoreError(.invalidRecord, "this delete-versus-edit conflict was recorded without the edit's values",
                             entity: conflict.entity, id: conflict.id)
        }
        guard !alive else {
            throw StoreError(.invalidRecord, "the edited record is there: nothing to re-create", entity: conflict.entity, id: conflict.id)
        }
        _ = try insert(conflict.entity, values: edited.values)
    }

    private func conflictRecord(_ statement: Statement) throws(SQLiteError) -> ConflictRecord? {
        guard case .text(let entityName) = statement.value(2), let entity = schema.entity(entityName),
            case .text(let kindName) = statement.value(4), let kind = ConflictKind(rawValue: kindName),
            case .text(let strategy) = statement.value(11), case .text(let winnerName) = statement.value(12),
            let winner = MergeWinner(rawValue: winnerName)
        else { return nil }
        var fieldName: String?, fieldIndex: Int?, type: FieldType?
        if case .text(let name) = statement.value(5), let index = entity.fieldIndex(name) {
            (fieldName, fieldIndex, type) = (name, index, entity.fields[index].type)
        }
        func text(_ column: Int32) -> String? {
            if case .text(let text) = statement.value(column) { return text }
            return nil
        }
        func value(_ column: Int32) -> Value? {
            guard let type, !statement.isNull(column) else { return nil }
            return statement.value(column, as: type)
        }
        let stamps = try decodeBlob(statement, 10, "stamps of a recorded conflict") {
            (bytes) throws(RecordCodingError) in try RecordCoding.decodeStamps(bytes, count: 3)
        }
        let conflict = FieldConflict(
            at: entityName, id: statement.int64(3), kind: kind, field: fieldName, fieldIndex: fieldIndex,
            ancestor: value(6), ancestorStamp: stamps[0].isNone ? nil : stamps[0], local: value(7), localStamp: stamps[1],
            remote: value(8), remoteStamp: stamps[2], strategy: strategy, winner: winner, result: value(9),
            deletedSide: text(13).flatMap(MergeWinner.init(rawValue:)), fallback: text(14).flatMap(MergeFallback.init(rawValue:)),
            edited: statement.isNull(15) ? nil : try? decodeBlob(statement, 15, "edited record of a recorded conflict") {
                (bytes) throws(RecordCodingError) in try RecordCoding.decodeAncestor(bytes, entity: entity, id: statement.int64(3)).record
            })
        return ConflictRecord(seq: statement.int64(0), decidedAt: UInt64(clamping: statement.int64(1)), conflict: conflict)
    }
}
