/// One difference between two versions of a schema, and whether stores and servers can make
/// it to their files on their own (Specs/schema.md, "Evolution").
public struct SchemaChange: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A new entity: its table is created, empty.
        case addEntity(String)
        /// An entity renamed (`renamedFrom`): its records, stamps and pending changes stay.
        case renameEntity(from: String, to: String)
        /// Another default strategy, delete policy or record rule: decides future merges.
        case changeEntityRules(entity: String, from: String, to: String)
        /// A new field after the existing ones: existing records get its default value,
        /// stamped older than any edit.
        case addField(entity: String, field: String)
        /// A field renamed (`renamedFrom`): its values, stamps and pending edits stay.
        case renameField(entity: String, from: String, to: String)
        /// Another strategy for a field, or another delete rule for a reference.
        case changeFieldRules(entity: String, field: String, from: String, to: String)
        /// A field no longer synced (``Field/retired``): a device empties it; the server
        /// keeps it for clients of older versions.
        case retireField(entity: String, field: String)
        /// An entity no longer synced (``Entity/retired``): a device empties its table; the
        /// server keeps its records for clients of older versions.
        case retireEntity(String)
        /// Another type for a field (neither type a reference), made by the app's own step
        /// (``Field/convertedFrom``) on every value; without it, not made.
        case convertField(entity: String, field: String, from: String, to: String, converted: Bool)
        /// Not made on its own: an entity or field removed, a field moved or inserted before
        /// existing ones, a type changed. An app migrates such data itself.
        case unsupported(String)
    }

    public var kind: Kind

    /// Whether stores and servers make this change to their files on their own.
    public var isSafe: Bool {
        switch kind {
        case .unsupported: false
        case .convertField(_, _, _, _, let converted): converted
        default: true
        }
    }

    public var description: String {
        switch kind {
        case .addEntity(let name): "add entity \(name)"
        case .renameEntity(let from, let to): "rename entity \(from) to \(to)"
        case .changeEntityRules(let entity, let from, let to): "entity \(entity): \(from) becomes \(to)"
        case .addField(let entity, let field): "add field \(entity).\(field)"
        case .renameField(let entity, let from, let to): "rename field \(entity).\(from) to \(to)"
        case .changeFieldRules(let entity, let field, let from, let to): "field \(entity).\(field): \(from) becomes \(to)"
        case .retireField(let entity, let field): "retire field \(entity).\(field)"
        case .retireEntity(let name): "retire entity \(name)"
        case .convertField(let entity, let field, let from, let to, let converted):
            converted
                ? "convert field \(entity).\(field) from \(from) to \(to) (the app's conversion)"
                : "change the type of \(entity).\(field) from \(from) to \(to)"
        case .unsupported(let what): what
        }
    }
}

extension SchemaOutline {
    /// What changes from this outline (the older version) to `new`: entities added and
    /// renamed, in `new`'s order; then, entity by entity, rule and field changes; then what
    /// `new` no longer has. Renames are matched through `renamedFrom`, the rest by name.
    public func changes(to new: SchemaOutline) -> [SchemaChange] {
        var changes: [SchemaChange] = []
        var pairs: [(old: EntityOutline, new: EntityOutline)] = []
        var renamedEntities: [String: String] = [:]  // old name -> new name
        let oldByName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newNames = Set(new.entities.map(\.name))
        for entity in new.entities {
            var old = oldByName[entity.name]
            if let previous = entity.renamedFrom, let renamed = oldByName[previous], !newNames.contains(previous) { old = renamed }
            guard let old, !pairs.contains(where: { $0.old.name == old.name }) else {
                changes.append(SchemaChange(kind: .addEntity(entity.name)))
                continue
            }
            pairs.append((old, entity))
            if old.name != entity.name {
                renamedEntities[old.name] = entity.name
                changes.append(SchemaChange(kind: .renameEntity(from: old.name, to: entity.name)))
            }
        }
        for (old, entity) in pairs {
            if old.rules != entity.rules {
                changes.append(SchemaChange(kind: .changeEntityRules(entity: entity.name, from: old.rules, to: entity.rules)))
            }
            if entity.retired && !old.retired {
                changes.append(SchemaChange(kind: .retireEntity(entity.name)))
            } else if old.retired && !entity.retired {
                changes.append(SchemaChange(kind: .unsupported(
                    "bring back retired entity \(entity.name) (devices emptied it; add a new entity instead)")))
            }
            changes += fieldChanges(old, entity, renamedEntities: renamedEntities)
        }
        for old in entities where !pairs.contains(where: { $0.old.name == old.name }) {
            changes.append(SchemaChange(kind: .unsupported("remove entity \(old.name) (its records would be lost; retire it instead)")))
        }
        return changes
    }

    private func fieldChanges(_ old: EntityOutline, _ new: EntityOutline, renamedEntities: [String: String]) -> [SchemaChange] {
        var changes: [SchemaChange] = []
        var matched: Set<String> = []
        let oldNames = Set(old.fields.map(\.name)), newNames = Set(new.fields.map(\.name))
        for (position, field) in new.fields.enumerated() {
            var previousName = field.name
            if let from = field.renamedFrom, oldNames.contains(from), !newNames.contains(from) { previousName = from }
            guard let oldPosition = old.fields.firstIndex(where: { $0.name == previousName }), !matched.contains(previousName) else {
                if position < old.fields.count {
                    changes.append(SchemaChange(kind: .unsupported(
                        "add field \(new.name).\(field.name) before existing fields (new fields go after them)")))
                } else {
                    changes.append(SchemaChange(kind: .addField(entity: new.name, field: field.name)))
                }
                continue
            }
            matched.insert(previousName)
            let before = old.fields[oldPosition]
            if oldPosition != position {
                changes.append(SchemaChange(kind: .unsupported("move field \(new.name).\(field.name) from position \(oldPosition + 1) to \(position + 1)")))
            }
            if before.name != field.name {
                changes.append(SchemaChange(kind: .renameField(entity: new.name, from: before.name, to: field.name)))
            }
            let target = before.target.map { renamedEntities[$0] ?? $0 }
            if before.type != field.type || target != field.target {
                let was = before.type + (before.target.map { " -> \($0)" } ?? ""), now = field.type + (field.target.map { " -> \($0)" } ?? "")
                if before.target == nil && field.target == nil {
                    changes.append(SchemaChange(kind: .convertField(
                        entity: new.name, field: field.name, from: was, to: now, converted: field.converts)))
                } else {
                    changes.append(SchemaChange(kind: .unsupported("change the type of \(new.name).\(field.name) from \(was) to \(now)")))
                }
            }
            let rules = { (f: FieldOutline) in "strategy=\(f.strategy ?? "default")" + (f.onDelete.map { " onDelete=\($0)" } ?? "") }
            if rules(before) != rules(field) {
                changes.append(SchemaChange(kind: .changeFieldRules(entity: new.name, field: field.name, from: rules(before), to: rules(field))))
            }
            if field.retired && !before.retired {
                changes.append(SchemaChange(kind: .retireField(entity: new.name, field: field.name)))
            } else if before.retired && !field.retired {
                changes.append(SchemaChange(kind: .unsupported(
                    "bring back retired field \(new.name).\(field.name) (devices emptied it; add a new field instead)")))
            }
        }
        for field in old.fields where !matched.contains(field.name) {
            changes.append(SchemaChange(kind: .unsupported("remove field \(old.name).\(field.name) (its values would be lost; retire it instead)")))
        }
        return changes
    }
}
