/// A schema by names only: entities, their rules, fields, types and strategy names. It is
/// what a store or a server records of the schema its file was made with (as text lines),
/// and what two schema versions are compared by (``SchemaChange``).
public struct SchemaOutline: Sendable, Equatable {
    public struct EntityOutline: Sendable, Equatable {
        public var name: String
        /// The entity-wide rules as one text: default strategy, delete policy, record rule.
        public var rules: String
        public var fields: [FieldOutline]
        /// From the schema (never from recorded lines): the name in the version before.
        public var renamedFrom: String?
        /// ``Entity/retired``: written as ` retired` at the end of the entity's line.
        public var retired = false
    }

    public struct FieldOutline: Sendable, Equatable {
        public var name: String
        /// The type's name; for a reference, also its target and delete rule.
        public var type: String
        public var target: String?
        public var onDelete: String?
        public var strategy: String?
        public var renamedFrom: String?
        /// ``Field/retired``: written as ` retired` at the end of the field's line.
        public var retired = false
        /// From the schema (never from recorded lines): whether the field carries the app's
        /// conversion from the type it had in the version before (``Field/convertedFrom``).
        public var converts = false
    }

    public var entities: [EntityOutline]

    public init(_ schema: Schema) {
        entities = schema.entities.map { entity in
            EntityOutline(
                name: entity.name,
                rules: "default=\(entity.defaultStrategy.name) delete=\(entity.deletePolicy.rawValue)"
                    + (entity.recordStrategy.map { " record=\($0.name)" } ?? ""),
                fields: entity.fields.map { field in
                    var outline = FieldOutline(
                        name: field.name, type: field.type.name, strategy: field.strategy?.name, renamedFrom: field.renamedFrom,
                        retired: field.retired, converts: field.convertedFrom != nil)
                    if case .reference(let target, let action) = field.type { (outline.target, outline.onDelete) = (target, action.rawValue) }
                    return outline
                },
                renamedFrom: entity.renamedFrom, retired: entity.retired)
        }
    }

    /// One line per entity and field, in order (renames are not part of them).
    public var lines: [String] {
        var lines: [String] = []
        for entity in entities {
            lines.append("entity \(entity.name) \(entity.rules)" + (entity.retired ? " retired" : ""))
            for field in entity.fields {
                var line = "  field \(entity.name).\(field.name) \(field.type)"
                if let target = field.target, let onDelete = field.onDelete { line += " -> \(target) \(onDelete)" }
                if let strategy = field.strategy { line += " strategy=\(strategy)" }
                if field.retired { line += " retired" }
                lines.append(line)
            }
        }
        return lines
    }

    /// Reads back ``lines``; nil when they are not lines it writes.
    public init?(lines: [String]) {
        var entities: [EntityOutline] = []
        for line in lines {
            let words = line.split(separator: " ").map(String.init)
            if line.hasPrefix("entity "), words.count >= 2 {
                var rules = words.dropFirst(2)
                let retired = rules.last == "retired"
                if retired { rules = rules.dropLast() }
                entities.append(EntityOutline(name: words[1], rules: rules.joined(separator: " "), fields: [], retired: retired))
            } else if line.hasPrefix("  field "), words.count >= 3, let last = entities.indices.last {
                let qualified = words[1].split(separator: ".", maxSplits: 1).map(String.init)
                guard qualified.count == 2, qualified[0] == entities[last].name else { return nil }
                var field = FieldOutline(name: qualified[1], type: words[2])
                var rest = words.dropFirst(3)
                if rest.first == "->" {
                    guard rest.count >= 3 else { return nil }
                    (field.target, field.onDelete) = (rest.dropFirst().first, rest.dropFirst(2).first)
                    rest = rest.dropFirst(3)
                }
                if rest.last == "retired" {
                    field.retired = true
                    rest = rest.dropLast()
                }
                let tail = rest.joined(separator: " ")
                if tail.hasPrefix("strategy=") { field.strategy = String(tail.dropFirst(9)) } else if !tail.isEmpty { return nil }
                entities[last].fields.append(field)
            } else {
                return nil
            }
        }
        self.entities = entities
    }
}

extension SchemaOutline {
    /// A short digest of ``lines`` (64-bit FNV-1a of the lines joined by newlines, as 16 hex
    /// digits): two parties with the same fingerprint use the same entities, fields, types
    /// and strategies.
    public var fingerprint: String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for (index, line) in lines.enumerated() {
            if index > 0 { hash = (hash ^ 0x0A) &* 0x0000_0100_0000_01B3 }
            for byte in line.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

extension Schema {
    /// ``SchemaOutline/fingerprint`` of this schema: what a sync request carries so that a
    /// client and a server never sync under different schemas.
    public var fingerprint: String { SchemaOutline(self).fingerprint }
}
