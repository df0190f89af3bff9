import FieldMerge

/// What the store refuses or could not do, with the context to act on it.
///
/// The ``code`` says what happened; ``message`` says it in words; ``entity``, ``id`` and
/// ``underlying`` carry the context. Cases can grow without breaking callers.
public struct StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// SQLite failed; ``underlying`` has its extended code, message and SQL.
        case sqlite
        /// The database holds another schema than the one given.
        case schemaMismatch
        /// The file is not a FieldMerge store, or its metadata is damaged.
        case corrupt
        case unknownEntity
        case unknownField
        case recordNotFound
        case recordExists
        /// A value does not fit its field, or a record does not fit its entity.
        case invalidRecord
        /// A delete refused because records still reference this one (`restrict`).
        case restricted
        /// The caller's code threw inside a store transaction; everything was rolled back.
        case aborted
        /// Refused while local changes wait to be sent (exporting a snapshot).
        case unsyncedChanges
        /// A reference names a record that does not exist (the message names the field and
        /// the missing record).
        case danglingReference
        /// An argument the store cannot take (a subscription without a scope name).
        case invalidArgument
        /// A file could not be read or written: one the app gave to attach, or one of the
        /// attachment cache (the message names the call, the path and the system's reason).
        case file
    }

    public var code: Code
    public var message: String
    public var entity: String?
    public var id: Int64?
    public var underlying: SQLiteError?
    /// The core's refusal, for ``Code/invalidRecord`` errors that come from the merge core.
    public var mergeError: MergeError?

    public init(
        _ code: Code, _ message: String, entity: String? = nil, id: Int64? = nil, underlying: SQLiteError? = nil,
        mergeError: MergeError? = nil
    ) {
        self.code = code
        self.message = message
        self.entity = entity
        self.id = id
        self.underlying = underlying
        self.mergeError = mergeError
    }

    /// SQLite's error as the store's: a damaged file (or damaged metadata) is ``Code/corrupt``,
    /// everything else ``Code/sqlite``; the SQLite error is kept either way.
    init(_ error: SQLiteError) {
        self.init(error.isCorrupt ? .corrupt : .sqlite, error.message, underlying: error)
    }

    init(_ error: MergeError, entity: String? = nil, id: Int64? = nil) {
        self.init(.invalidRecord, error.description, entity: entity, id: id, mergeError: error)
    }

    /// Whether the database was busy or locked by another connection: retrying later may work,
    /// and nothing was changed.
    public var isBusy: Bool { underlying?.isBusy ?? false }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let entity { text += " [\(entity)\(id.map { "#\($0)" } ?? "")]" }
        if let underlying { text += " (\(underlying))" }
        return text
    }
}

/// Runs `body`, turning SQLite's errors into ``StoreError``s.
@inline(__always)
func sqlite<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    do { return try body() } catch { throw StoreError(error) }
}
