import FieldMerge

/// A read-only connection to a store's file, on an executor of its own, for reads that run
/// while the store's writer works (a sync applying a response, a local edit).
///
/// File stores use write-ahead logging, so a reader sees the last committed state and never
/// waits for the writer, nor the writer for it. Everything a ``Store`` reads works here
/// (``Store/fetch(_:id:)``, ``Store/untyped``, ``Store/pendingChanges(limit:includingParked:)``, plain
/// SQL through ``Store/database``); writing fails with a read-only error.
///
/// ```swift
/// let reader = try StoreReader(path: path, schema: schema)   // path: the file of a Store with this schema
/// let open = try await reader.read { store in try store.database.rows("SELECT id FROM tasks WHERE done = 0") }
/// ```
public actor StoreReader {
    private let executor: DatabaseExecutor
    private let store: Store

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Opens a read-only connection to the store at `path`, which a ``Store`` must have
    /// created with the same `schema`.
    ///
    /// - Throws: ``StoreError`` as ``Store/init(_:schema:replica:wall:options:)`` does.
    public init(path: String, schema: Schema) throws(StoreError) {
        var options = Database.Options()
        options.readOnly = true
        store = try Store(.file(path: path), schema: schema, options: options)
        executor = DatabaseExecutor(label: "FieldMerge.StoreReader")
    }

    /// Runs `body` with the read-only store, on this reader's executor, in one read
    /// transaction: every query in it sees the same committed state.
    ///
    /// - Throws: What `body` throws; ``StoreError`` when the read transaction cannot start.
    public func read<T: Sendable>(_ body: (Store) throws -> T) throws -> T {
        try store.database.transaction(.deferred) { try body(store) }
    }

    /// Closes the reader's connection; later reads fail with a closed-database error.
    public func close() { store.close() }
}
