import FieldMerge
import Foundation

/// Reads and writes records as JSON, typed by their entity.
///
/// ```json
/// { "id": 7, "values": { "title": "Buy milk", "tags": ["home"] },
///   "stamps": { "title": [1700000000000, 1] }, "deleted": null }
/// ```
/// A stamp is `[clock, replica]` with the packed clock value; `deleted` is a stamp or null.
/// A field missing from `values` is null; one missing from `stamps` has no stamp. Reals
/// are JSON numbers (`"nan"`, `"inf"`, `"-inf"` as strings), dates integers (milliseconds since 1970), blobs base64 strings, text
/// sets arrays of strings, references integers. Unknown fields are errors.
public enum RecordDocument {
    public static func decode(_ reader: JSONValue, entity: Entity, path: String = "$") throws(DocumentError) -> Record {
        try decode(Reader(path: path, reader), entity: entity)
    }

    static func decode(_ reader: Reader, entity: Entity) throws(DocumentError) -> Record {
        try reader.allowOnly(["id", "values", "stamps", "deleted"])
        let id = try reader.integer("id")
        let valueEntries = try reader.entries("values")
        let stampEntries = try reader.entries("stamps")
        for key in valueEntries.keys.sorted() where entity.fieldIndex(key) == nil {
            throw reader.error("values.\(key)", "entity '\(entity.name)' has no field '\(key)'")
        }
        for key in stampEntries.keys.sorted() where entity.fieldIndex(key) == nil {
            throw reader.error("stamps.\(key)", "entity '\(entity.name)' has no field '\(key)'")
        }
        var values = ContiguousArray<Value>()
        var stamps = ContiguousArray<Stamp>()
        for field in entity.fields {
            values.append(try decodeValue(valueEntries[field.name] ?? .null, type: field.type,
                                          path: "\(reader.path).values.\(field.name)"))
            stamps.append(try stampEntries[field.name].map { (json) throws(DocumentError) in
                try decodeStamp(json, path: "\(reader.path).stamps.\(field.name)")
            } ?? .none)
        }
        let tombstone = try reader.optional("deleted").map { (json) throws(DocumentError) in
            try decodeStamp(json, path: "\(reader.path).deleted")
        }
        if tombstone?.isNone == true {
            throw reader.error("deleted", "a tombstone needs a stamp other than [0, 0]; use null for a living record")
        }
        return Record(entity: entity.name, id: id, values: values, stamps: stamps, tombstone: tombstone)
    }

    /// A stamp is `[clock, replica]`: two unsigned 64-bit integers, each a JSON integer, or
    /// a string of decimal digits for values of 2^63 and above (beyond what many JSON
    /// readers keep exact).
    public static func decodeStamp(_ json: JSONValue, path: String) throws(DocumentError) -> Stamp {
        func unsigned(_ part: JSONValue) -> UInt64? {
            switch part {
            case .integer(let value): return value >= 0 ? UInt64(value) : nil
            case .string(let digits): return digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) ? UInt64(digits) : nil
            default: return nil
            }
        }
        guard case .array(let parts) = json, parts.count == 2, let clock = unsigned(parts[0]),
            let replica = unsigned(parts[1])
        else {
            throw DocumentError(path: path, message: "expected a stamp [clock, replica] of two unsigned 64-bit integers")
        }
        return Stamp(clock: clock, replica: ReplicaID(replica))
    }

    public static func encodeStamp(_ stamp: Stamp) -> JSONValue {
        func unsigned(_ value: UInt64) -> JSONValue {
            value <= UInt64(Int64.max) ? .integer(Int64(value)) : .string(String(value))
        }
        return .array([unsigned(stamp.clock), unsigned(stamp.replica.rawValue)])
    }

    public static func decodeValue(_ json: JSONValue, type: FieldType, path: String) throws(DocumentError) -> Value {
        func mismatch() -> DocumentError {
            DocumentError(path: path, message: "expected \(type.name) or null, got \(json.kindName)")
        }
        switch (type, json) {
        case (_, .null): return .null
        case (.integer, .integer(let v)), (.reference, .integer(let v)): return .integer(v)
        case (.date, .integer(let v)): return .date(v)
        case (.real, .number(let v)): return .real(v)
        case (.real, .integer(let v)): return .real(Double(v))
        case (.real, .string(let v)) where ["nan", "inf", "-inf"].contains(v):
            return .real(v == "nan" ? .nan : v == "inf" ? .infinity : -.infinity)
        case (.text, .string(let v)), (.attachment, .string(let v)): return .text(v)
        case (.bool, .bool(let v)): return .bool(v)
        case (.blob, .string(let v)):
            guard let data = Data(base64Encoded: v) else {
                throw DocumentError(path: path, message: "expected base64 for a blob")
            }
            return .blob(Array(data))
        case (.integer, .number(let v)), (.reference, .number(let v)), (.date, .number(let v)):
            throw DocumentError(
                path: path,
                message: "expected \(type.name) or null, got the number \(v): only a JSON integer (no fraction, "
                    + "no exponent, within the signed 64-bit range) is an integer")
        case (.textSet, .array(let items)):
            var members: [String] = []
            for (offset, item) in items.enumerated() {
                guard case .string(let member) = item else {
                    throw DocumentError(path: "\(path)[\(offset)]", message: "expected a string in a text set, got \(item.kindName)")
                }
                members.append(member)
            }
            return .textSet(TextSet(members))
        default:
            throw mismatch()
        }
    }

    public static func encodeValue(_ value: Value) -> JSONValue {
        switch value {
        case .null: return .null
        case .integer(let v), .date(let v): return .integer(v)
        case .real(let v): return v.isFinite ? .number(v) : .string(v.isNaN ? "nan" : v < 0 ? "-inf" : "inf")
        case .text(let v): return .string(v)
        case .bool(let v): return .bool(v)
        case .blob(let v): return .string(Data(v).base64EncodedString())
        case .textSet(let v): return .array(v.elements.map(JSONValue.string))
        }
    }

    public static func encode(_ record: Record, entity: Entity) -> JSONValue {
        var values: [String: JSONValue] = [:]
        var stamps: [String: JSONValue] = [:]
        for (index, field) in entity.fields.enumerated() {
            values[field.name] = encodeValue(record.values[index])
            if !record.stamps[index].isNone { stamps[field.name] = encodeStamp(record.stamps[index]) }
        }
        return .object([
            "id": .integer(record.id), "values": .object(values), "stamps": .object(stamps),
            "deleted": record.tombstone.map(encodeStamp) ?? .null,
        ])
    }
}
