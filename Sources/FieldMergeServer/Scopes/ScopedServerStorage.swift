import FieldMerge
import FieldMergeProtocol

/// A ``ServerStorage`` that can serve scopes (Specs/scopes.md): it keeps each record's root
/// (``ServerRow/root``, also in tombstones: ``Deletion/root``), finds records by root and
/// revision without reading the others, and remembers which records left which root.
///
/// Every call runs inside the server's transaction, on its executor, like the rest of
/// ``ServerStorage``.
public protocol ScopedServerStorage: ServerStorage {
    /// The scopes the stored roots were computed for (``saveScopeSignature(_:)``); nil when
    /// they never were.
    nonisolated(nonsending) func scopeSignature() async throws -> String?
    nonisolated(nonsending) func saveScopeSignature(_ signature: String) async throws
    /// Sets the root of every record of `entity`: its own id when `parent` is nil (the
    /// root entity), else the root of the record of `parent.entity` its field `parent.field`
    /// references (nil when that is null or missing); nil for every record with `clear`
    /// (an entity no longer scoped).
    nonisolated(nonsending) func assignRoots(_ entity: ServerEntity, parent: (entity: ServerEntity, field: Int)?, clear: Bool) async throws

    /// The values of `select` (a reference or integer field; nil: `id`) of the alive
    /// records of `entity` that meet every condition (a field, or `id` when nil, equal to
    /// one of the values), without nulls or repeats. Values are bound, never spliced.
    nonisolated(nonsending) func select(_ select: Int?, of entity: ServerEntity, where conditions: [(field: Int?, values: [Value])]) async throws -> [Int64]

    /// The records of `entity` whose root `roots` selects and that changed after `after` up
    /// to `through`: alive ones, and deleted ones with their tombstones.
    nonisolated(nonsending) func changes(
        _ entity: ServerEntity, roots: RootFilter, after: Int64, through: Int64
    ) async throws -> (alive: [ServerRow], deleted: [Deletion])
    /// The alive records of `entity` whose root `roots` selects, at revisions up to `through`.
    nonisolated(nonsending) func records(_ entity: ServerEntity, roots: RootFilter, through: Int64) async throws -> [ServerRow]
    /// How many alive records of `entity` each of `roots` has at revisions up to `through`
    /// (roots without any are left out): what a page of backfill counts to know which
    /// gained roots fit (Specs/scopes.md §6).
    nonisolated(nonsending) func rootSizes(_ entity: ServerEntity, roots: [Int64], through: Int64) async throws -> [Int64: Int]
    /// The ids of the alive records of `entity` whose root `roots` selects.
    nonisolated(nonsending) func ids(_ entity: ServerEntity, roots: RootFilter) async throws -> [Int64]

    /// The revisions of the records of `entity` (alive and deleted) whose root `roots`
    /// selects and that changed after `after`, ascending, at most `limit`: what a scoped
    /// catch-up page counts to know where to end. Also asked with ``RootFilter/every`` (of
    /// unscoped entities, and of users who hold every root): a storage serving scopes keeps
    /// every table's changes findable by revision (``scopeSignature()`` is asked first, when
    /// a server with scopes starts).
    nonisolated(nonsending) func revisions(_ entity: ServerEntity, roots: RootFilter, after: Int64, limit: Int) async throws -> [Int64]

    /// Notes that record `id` of `entity` left root `root` at `revision`.
    nonisolated(nonsending) func depart(_ entity: ServerEntity, id: Int64, from root: Int64, revision: Int64) async throws
    /// The ids of the records of `entity` that left a root `roots` selects after `after`
    /// up to `through`.
    nonisolated(nonsending) func departures(_ entity: ServerEntity, roots: RootFilter, after: Int64, through: Int64) async throws -> [Int64]
}
