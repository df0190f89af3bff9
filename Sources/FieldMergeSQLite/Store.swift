import FieldMerge

/// A replica's local SQLite copy: the app's tables, the sync metadata beside each row, the
/// durable outbox, the temporary-id counter and the client state.
///
/// Each entity is a table named like the entity, with an integer `id` primary key and one
/// typed column per field, so the app reads its data with plain SQL. Four columns starting
/// with `__fm_` hold the field stamps, the mask of pending fields, and the ancestor: the
/// revision and the last version the server acknowledged (NULL while it equals the row).
/// Deleted records leave the app table; their tombstones wait in `__fm_tombstones` until the
/// server has them.
///
/// A store is one connection, used from one task at a time (an actor owns it in the sync
/// layer). Every public call that writes is one transaction: all or nothing.
public final class Store {
    public let schema: Schema
    public let database: Database
    /// This replica's id, persisted with the data.
    public let replica: ReplicaID
    /// What opening the store changed in its file to move it to a newer schema version
    /// (Specs/schema.md, "Evolution"); empty when the file already had this schema.
    public let migrations: [SchemaChange]
    /// The replica's clock; its last value is persisted with every edit.
    public internal(set) var clock: HybridClock
    /// The revision of the server's data set this replica holds.
    public internal(set) var maxRevision: Int64
    /// The next temporary id to hand out (-1, -2, ...).
    public internal(set) var nextTemporaryID: Int64
    /// What the device holds of the server's scopes, as the last applied response said
    /// (`__fm_state` key `scopes`, written with ``maxRevision``): opaque text for the sync
    /// layer (`ScopeHoldings.storedText`); nil when the server has no scopes.
    package internal(set) var scopeState: String?

    /// Called after every committed transaction that changed something, on the thread that
    /// wrote (the sync client's executor for a client's store); see ``StoreChange``.
    public var onChange: ((StoreChange) -> Void)?
    /// What the transaction in progress changed so far.
    var pendingChange: StoreChange?
    /// The typed change feeds and live queries listening (``changes(of:)``, ``observe(_:bufferingPolicy:)``).
    let observers = StoreObservers()
    /// Whether `__fm_writer` holds the marker of the transaction in progress (a store call
    /// runs), so the capture triggers skip its writes.
    var ownWrites = false
    /// The state to restore when the held transaction rolls back; nil when none is open
    /// (``beginHeldTransaction()``).
    var held: HeldState?
    /// Outside ``applyingPieces(_:)``: nil; else whether a piece took the capture triggers
    /// out of the way (and how), which stays so until the pieces end.
    var pieceTriggers: CaptureTriggersOff?
    /// Whether the connection may write (a `StoreReader`'s may not).
    let writable: Bool
    /// The wall clock the replica's clock reads (also for the time a change was refused).
    package let wall: any WallClock

    /// The attachment cache once used (``attachmentCache()``), and whether the store made
    /// its directory and removes it when it closes (an in-memory store's temporary one).
    var attachmentCacheState: (cache: AttachmentCache, owned: Bool)?
    /// The most bytes the attachment cache keeps (``evictAttachments()``); nil keeps everything.
    /// Files whose upload is owed to the server count but are never evicted. Set with
    /// ``setAttachmentCacheLimit(_:)``, which keeps it in the store's file: a store opens
    /// with the limit it was last given.
    public internal(set) var attachmentCacheLimit: Int64?
    /// How the SHA-256 of attachments is computed when a file is attached and when a
    /// download is checked (the core's plain Swift by default; CryptoKit's or swift-crypto's
    /// are about ten times as fast: `AttachmentHashing` in the core).
    public var attachmentHashing: AttachmentHashing = .portable

    var tables: [String: EntityTable] = [:]
    var scratch: [UInt8] = []
    /// The hottest statements, by entity name: cheaper to find than by their long SQL text.
    var selects: [String: Statement] = [:]
    var upserts: [String: Statement] = [:]

    /// The store format this code writes and reads.
    static let format: Int64 = 1

    /// Closes the store's connection at once, with the statements the store keeps
    /// (`Database.close()` alone leaves the connection open until those are released; the
    /// last connection to close moves the log into the file). Later use of the store fails
    /// with a closed-database error.
    public func close() {
        selects.removeAll()
        upserts.removeAll()
        database.close()
        removeOwnedAttachmentCache()
    }

    deinit { removeOwnedAttachmentCache() }

    /// Opens (or creates) a store.
    ///
    /// - Parameters:
    ///   - location: A file, or `.memory`.
    ///   - schema: The app's schema; an existing file must hold the same one.
    ///   - replica: The replica id for a new store (a random one if nil); an existing store
    ///     keeps its own.
    ///   - wall: The wall clock for stamps.
    ///   - options: How SQLite opens the file (`Database.Options`: busy timeout, durability).
    /// - Throws: ``StoreError`` with ``StoreError/Code/schemaMismatch`` (saying what
    ///   differs) when the file holds another schema, ``StoreError/Code/corrupt`` when it is
    ///   not a FieldMerge store, ``StoreError/Code/sqlite`` when SQLite fails.
    public init(
        _ location: Database.Location = .memory, schema: Schema, replica: ReplicaID? = nil,
        wall: any WallClock = SystemWallClock(), options: Database.Options = Database.Options()
    ) throws(StoreError) {
        self.schema = schema
        self.wall = wall
        self.writable = !options.readOnly
        let database = try sqlite { () throws(SQLiteError) in try Database(location, options: options) }
        self.database = database
        var tables: [String: EntityTable] = [:]
        for entity in schema.entities { tables[entity.name] = EntityTable(entity) }
        for entity in schema.entities {
            for (index, field) in entity.fields.enumerated() {
                if case .reference(let target, let action) = field.type {
                    tables[target]?.referencedBy.append((entity.name, index, action))
                }
            }
        }
        self.tables = tables
        let initialized = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT count(*) FROM sqlite_master WHERE name = '__fm_state'") == .integer(1)
        }
        if !initialized {
            try Self.create(database, schema: schema, replica: replica ?? Self.randomReplica())
        }
        if !options.readOnly {
            try sqlite { () throws(SQLiteError) in
                try database.execute(StoreSchema.parkedTable)
                try database.execute(StoreSchema.asideTable)
                try database.execute(StoreSchema.subscriptionsTable)
                try database.execute(StoreSchema.attachmentsTable)
                try Self.prepareConflictHistory(database)
                try database.execute(StoreCapture.metadataTables)
            }
        }
        migrations = try Self.migrate(database, to: schema, readOnly: options.readOnly)
        if !options.readOnly {
            try sqlite { () throws(SQLiteError) in
                for entity in schema.entities {
                    for statement in StoreCapture.statements(for: entity) { try database.execute(statement) }
                }
            }
        }
        let state = try Self.readState(database, schema: schema)
        self.replica = state.replica
        clock = HybridClock(replica: state.replica, last: state.clock, wall: wall)
        maxRevision = state.maxRevision
        nextTemporaryID = state.nextTemporaryID
        scopeState = state.scopeState
        attachmentCacheLimit = try Self.storedAttachmentCacheLimit(database)
    }

    static func randomReplica() -> ReplicaID {
        var generator = SystemRandomNumberGenerator()
        var id: UInt64 = 0
        while id == 0 { id = generator.next() }
        return ReplicaID(id)
    }

    private static func create(_ database: Database, schema: Schema, replica: ReplicaID) throws(StoreError) {
        let userTables = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        }
        guard userTables == .integer(0) else {
            throw StoreError(.corrupt, "the database has tables but no FieldMerge state: not a FieldMerge store")
        }
        do {
            try database.transaction(.immediate) {
                try database.execute(StoreSchema.metadataTables)
                for entity in schema.entities {
                    try database.execute(StoreSchema.createTable(entity))
                    for index in entity.referenceIndexes { try database.execute(index) }
                }
                let state: [(String, SQLValue)] = [
                    ("format", .integer(format)), ("replica", .integer(Int64(bitPattern: replica.rawValue))),
                    ("clock", .integer(0)), ("maxRevision", .integer(0)), ("nextTemporaryID", .integer(-1)),
                    ("schema", .text(schema.describedLines.joined(separator: "\n"))),
                    ("schemaVersion", .integer(Int64(schema.version))),
                ]
                for (key, value) in state {
                    try database.run("INSERT INTO \"__fm_state\" (\"key\", \"value\") VALUES (?, ?)", [.text(key), value])
                }
            }
        } catch let error as SQLiteError {
            throw StoreError(error)
        } catch {
            throw StoreError(.corrupt, "\(error)")
        }
    }

    private struct State {
        var replica: ReplicaID, clock: UInt64, maxRevision: Int64, nextTemporaryID: Int64, scopeState: String?
    }

    private static func readState(_ database: Database, schema: Schema) throws(StoreError) -> State {
        let rows = try sqlite { () throws(SQLiteError) in try database.rows("SELECT \"key\", \"value\" FROM \"__fm_state\"") }
        var values: [String: SQLValue] = [:]
        for row in rows where row.count == 2 {
            if case .text(let key) = row[0] { values[key] = row[1] }
        }
        func integer(_ key: String) throws(StoreError) -> Int64 {
            guard case .integer(let value)? = values[key] else {
                throw StoreError(.corrupt, "the store's state lacks '\(key)'")
            }
            return value
        }
        guard try integer("format") == format else {
            throw StoreError(.corrupt, "store format \(try integer("format")) is not the supported format \(format)")
        }
        guard case .text(let stored)? = values["schema"] else { throw StoreError(.corrupt, "the store's state lacks 'schema'") }
        let expected = schema.describedLines
        let storedLines = stored.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard storedLines == expected else {
            throw StoreError(.schemaMismatch, "the file was created with another schema: "
                + schema.differences(fromStored: storedLines))
        }
        return State(
            replica: ReplicaID(UInt64(bitPattern: try integer("replica"))),
            clock: UInt64(bitPattern: try integer("clock")), maxRevision: try integer("maxRevision"),
            nextTemporaryID: try integer("nextTemporaryID"), scopeState: try scopeText(values["scopes"]))
    }

    /// Persists the clock, the revision and the temporary-id counter (inside the caller's
    /// transaction).
    func saveState() throws(SQLiteError) {
        // One statement for the three rows: every transaction of the store ends with it.
        try database.run(
            "UPDATE \"__fm_state\" SET \"value\" = CASE \"key\" WHEN 'clock' THEN ? WHEN 'maxRevision' THEN ? ELSE ? END "
                + "WHERE \"key\" IN ('clock', 'maxRevision', 'nextTemporaryID')",
            [.integer(Int64(bitPattern: clock.last)), .integer(maxRevision), .integer(nextTemporaryID)])
    }

    func table(_ entity: String) throws(StoreError) -> EntityTable {
        guard let table = tables[entity] else { throw StoreError(.unknownEntity, "the schema has no entity '\(entity)'", entity: entity) }
        return table
    }

    /// The table of an entity the app may write: not a retired one (``Entity/retired``).
    func writableTable(_ entity: String) throws(StoreError) -> EntityTable {
        let table = try table(entity)
        guard !table.entity.retired else {
            throw StoreError(.unknownEntity, "entity '\(entity)' is retired: it is no longer synced and stays empty", entity: entity)
        }
        return table
    }
}

extension Store {
    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: return error
        case let error as SQLiteError: return StoreError(error)
        case let error as MergeError: return StoreError(error)
        default: return StoreError(.aborted, "\(error)")
        }
    }

    /// Advances the clock past stamps received from the server (see ``HybridClock/observe(_:)``).
    /// The clock is persisted with the next write.
    package func observe(_ stamps: some Sequence<Stamp>) {
        // Observing the largest is observing them all, with one reading of the wall clock.
        if let newest = stamps.max(), !newest.isNone { clock.observe(newest) }
    }

    /// A fresh stamp of this replica's clock (for values a merge computes).
    package func nextStamp() -> Stamp { clock.now() }
}
