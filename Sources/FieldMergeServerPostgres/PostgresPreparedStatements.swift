import PostgresNIO
import Synchronization

/// The statements a connector's connections keep prepared: named once per connection, so
/// that PostgreSQL parses each once per connection instead of on every call, and can keep
/// its plan (Specs/http.md §8, "Prepared statements").
///
/// PostgresNIO prepares a statement whose text is a static property of a Swift type, but
/// ours name the data set's schema, known only at run time. ``PostgresNamedStatement``
/// therefore reads its text and name from a task-local set around the call.
///
/// Only statements whose text is fixed per data set, whose parameters always have the same
/// types and whose result columns never change are prepared (the callers choose). The
/// number of names is bounded (``limit``): past it, statements run unnamed, as before.
/// A statement that failed on a connection is never executed by name there again:
/// PostgresNIO remembers a failed preparation for the connection's lifetime.
final class PostgresPreparedStatements: Sendable {
    private struct State {
        var names: [String: String] = [:]
        var avoided: Set<Avoided> = []
    }

    private struct Avoided: Hashable {
        let connection: PostgresConnection.ID
        let name: String
    }

    /// The most distinct texts given a name (each may be prepared on every connection).
    let limit: Int
    private let state = Mutex(State())

    init(limit: Int = 512) { self.limit = limit }

    /// The name `sql`, with parameters of `types` (a text of the caller's that tells kinds of
    /// parameters apart, empty when they never vary), is prepared under on `connection`;
    /// nil to run it unnamed.
    func name(for sql: String, types: String = "", on connection: PostgresConnection.ID) -> String? {
        let key = types.isEmpty ? sql : sql + "\u{0}" + types
        return state.withLock { state in
            let name: String
            if let known = state.names[key] {
                name = known
            } else {
                guard state.names.count < limit else { return nil }
                name = "fm_\(state.names.count + 1)"
                state.names[key] = name
            }
            return state.avoided.contains(Avoided(connection: connection, name: name)) ? nil : name
        }
    }

    /// `name` failed on `connection`: run its text unnamed there from now on.
    func avoid(_ name: String, on connection: PostgresConnection.ID) {
        _ = state.withLock { $0.avoided.insert(Avoided(connection: connection, name: name)) }
    }

    var count: Int { state.withLock { $0.names.count } }
}

/// A statement prepared under a name chosen at run time: PostgresNIO reads ``name`` and
/// ``sql`` while the call runs, in the calling task, where ``current`` holds them.
struct PostgresNamedStatement: PostgresPreparedStatement {
    typealias Row = PostgresRow

    struct Text: Sendable {
        let name: String
        let sql: String
    }

    @TaskLocal static var current: Text?

    static var name: String { text.name }
    static var sql: String { text.sql }

    private static var text: Text {
        guard let current else { preconditionFailure("PostgresNamedStatement used outside PostgresNamedStatement.$current.withValue") }
        return current
    }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
