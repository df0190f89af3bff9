import FieldMerge

/// An older schema version a server still answers (Specs/schema.md, "Mixed-version fleets"):
/// the codec its clients' bodies are read and written with, and the translation of their
/// change sets into the current schema and of the answers back.
///
/// A client of an older version never sees what its version lacks, and never clears it:
/// - its change sets are **lifted**: entities take their current names, records their
///   current width; fields it does not know are absent from its updates (so the server
///   leaves them as they are), and its creates give them their defaults under
///   ``Stamp/schemaDefault``, as a migration gives existing records;
/// - answers are **projected**: entities it does not know are left out, records are cut
///   to its fields, names are its own.
public struct WireVersion: Sendable {
    /// The older version's codec.
    public let codec: WireCodec
    public let older: OlderSchema
    /// Per older entity: the current entity.
    private let currentEntities: [Entity]
    /// Current entity name → the older entity's position.
    private let olderPositions: [String: Int]

    /// - Precondition: `older.currentNames` name entities of `current`, each with at least
    ///   as many fields as its older version (checked when the server opens).
    init(_ older: OlderSchema, current: Schema, limits: WireLimits) {
        codec = WireCodec(schema: older.schema, limits: limits)
        self.older = older
        currentEntities = older.currentNames.map { current.entity($0)! }
        var positions: [String: Int] = [:]
        for (position, name) in older.currentNames.enumerated() { positions[name] = position }
        olderPositions = positions
    }

    /// Whether `older` maps into `current` as ``init(_:current:limits:)`` requires.
    static func fits(_ older: OlderSchema, current: Schema) -> Bool {
        zip(older.schema.entities, older.currentNames).allSatisfy { entity, name in
            guard let now = current.entity(name), now.fields.count >= entity.fields.count else { return false }
            return zip(entity.fields, now.fields).allSatisfy { $0.type.name == $1.type.name }
        }
    }

    /// The change sets of an older client's request, in the current schema.
    public func lift(_ changeSets: [ChangeSet]) -> [ChangeSet] {
        changeSets.map { changeSet in
            var lifted = changeSet
            lifted.entities = changeSet.entities.map(lift)
            return lifted
        }
    }

    private func lift(_ changes: EntityChanges) -> EntityChanges {
        guard let position = older.schema.entities.firstIndex(where: { $0.name == changes.entity }) else { return changes }
        let entity = currentEntities[position], known = older.schema.entities[position].fields.count
        var lifted = changes
        lifted.entity = entity.name
        guard entity.fields.count > known else { return lifted }
        let made = Set(changes.create).union(changes.recreate)
        lifted.records = changes.records.map { record in
            var wide = record
            wide.values += entity.fields[known...].map { _ in Value.null }
            wide.stamps? += ContiguousArray(repeating: .none, count: entity.fields.count - known)
            if made.contains(record.id) {
                for index in known..<entity.fields.count {
                    wide.values[index] = entity.fields[index].defaultValue
                    wide.present.insert(index)
                    wide.stamps?[index] = .schemaDefault
                }
            }
            return wide
        }
        return lifted
    }

    /// A response in the current schema, as the older client reads it.
    public func project(_ response: SyncResponse) -> SyncResponse {
        var projected = response
        projected.changeSets = response.changeSets.map { changeSet in
            var narrow = changeSet
            narrow.entities = changeSet.entities.compactMap(project)
            narrow.refused = changeSet.refused.compactMap { refused in
                guard let position = olderPositions[refused.entity] else { return nil }
                var renamed = refused
                renamed.entity = older.schema.entities[position].name
                return renamed
            }
            return narrow
        }
        return projected
    }

    private func project(_ changes: EntityChanges) -> EntityChanges? {
        guard let position = olderPositions[changes.entity] else { return nil }
        let entity = older.schema.entities[position], known = entity.fields.count
        var narrow = changes
        narrow.entity = entity.name
        guard currentEntities[position].fields.count > known else { return narrow }
        let mask = FieldMask.all(count: known)
        narrow.records = changes.records.map { record in
            var cut = record
            cut.values = ContiguousArray(record.values.prefix(known))
            cut.present = FieldMask(bits: record.present.bits & mask.bits)
            cut.stamps = record.stamps.map { ContiguousArray($0.prefix(known)) }
            return cut
        }
        return narrow
    }
}

extension WireCodec {
    /// A codec that writes and reads every entity and field of `schema`, retired ones
    /// included: what a server keeps its stored replies in, since clients of older versions
    /// still sync those.
    public static func everyField(of schema: Schema) -> WireCodec {
        guard schema.entities.contains(where: { $0.retired || !$0.retiredFields.isEmpty }) else { return WireCodec(schema: schema) }
        let entities = schema.entities.map { entity in
            var all = entity
            all.retired = false
            for index in all.fields.indices { all.fields[index].retired = false }
            return all
        }
        // The same entities and types as `schema`, which is valid: so is this.
        return WireCodec(schema: try! Schema(entities, version: schema.version))
    }

    /// A codec for `schema` that also reads requests of older versions of it (each by its
    /// own codec, recognised by the fingerprint the request carries) and knows how to
    /// answer them: ``version(fingerprint:)``.
    ///
    /// Older versions that do not fit `schema` (an entity gone, a field's type changed) are
    /// left out: their clients are refused as before.
    public init(schema: Schema, limits: WireLimits = WireLimits(), older: [OlderSchema]) {
        self.init(schema: schema, limits: limits)
        var versions: [String: WireVersion] = [:]
        for version in older where WireVersion.fits(version, current: schema) && version.fingerprint != schemaFingerprint {
            versions[version.fingerprint] = WireVersion(version, current: schema, limits: limits)
        }
        olderVersions = versions
    }

    /// The older version a request's fingerprint names, or nil for the current one (or
    /// none known).
    public func version(fingerprint: String?) -> WireVersion? {
        fingerprint.flatMap { olderVersions[$0] }
    }

    /// The codec that writes the answer to `request`: its older version's, or this one.
    public func codec(answering request: SyncRequest) -> WireCodec {
        version(fingerprint: request.schemaFingerprint)?.codec ?? self
    }
}
