import FieldMerge
import FieldMergeJSON
import FieldMergeServer
import Foundation

/// A data set as JSON lines (Specs/reliability.md, "Moving a data set"): one
/// ``DataSetItem`` per line, a header first and the counts last.
///
/// ```
/// {"fieldmerge":"data set","format":1,"revision":42,"schema":["..."],"schemaVersion":1}
/// {"row":["maxRevision",42],"table":"__fm_server"}
/// {"created":3,"entity":"Reminder","fieldRevisions":null,"record":{...},"revision":40,"root":null}
/// {"end":{"records":{"Reminder":2},"tables":{"__fm_server":3}}}
/// ```
/// A row's cells follow its table's columns: integers as JSON integers, text as strings,
/// bytes as base64 strings. A record is ``RecordDocument``'s form.
public enum DataSetLines {
    /// `item` as one line of JSON, without its newline.
    public static func encode(_ item: DataSetItem, schema: Schema) -> String {
        let value: JSONValue
        switch item {
        case .header(let header):
            value = .object([
                "fieldmerge": .string("data set"), "format": .integer(Int64(header.format)),
                "schema": .array(header.schemaLines.map(JSONValue.string)), "schemaVersion": .integer(Int64(header.schemaVersion)),
                "revision": .integer(header.revision),
            ])
        case .row(let table, let cells):
            value = .object(["table": .string(table.name), "row": .array(cells.map(encode))])
        case .record(let position, let row):
            let entity = schema.entities[position]
            value = .object([
                "entity": .string(entity.name), "record": RecordDocument.encode(row.record, entity: entity),
                "revision": .integer(row.revision), "created": .integer(row.created),
                "fieldRevisions": row.fieldRevisions.map { .array($0.map(JSONValue.integer)) } ?? .null,
                "root": row.root.map(JSONValue.integer) ?? .null,
            ])
        case .end(let counts):
            func numbers(_ counts: [String: Int]) -> JSONValue { .object(counts.mapValues { .integer(Int64($0)) }) }
            value = .object(["end": .object(["tables": numbers(counts.tables), "records": numbers(counts.records)])])
        }
        return value.renderedLine()
    }

    /// The item on `line` (without its newline).
    ///
    /// - Throws: ``DataSetTransferError`` naming what on the line is wrong.
    public static func decode(_ line: Data, schema: Schema) throws(DataSetTransferError) -> DataSetItem {
        let value: JSONValue
        do { value = try JSONValue.parse(line) } catch { throw DataSetTransferError("not JSON: \(error)") }
        guard case .object(let object) = value else { throw DataSetTransferError("not a JSON object") }
        if object["fieldmerge"] != nil {
            guard object["fieldmerge"] == .string("data set") else { throw DataSetTransferError("not a FieldMerge data set") }
            guard case .integer(let format)? = object["format"], case .array(let lines)? = object["schema"],
                case .integer(let version)? = object["schemaVersion"], case .integer(let revision)? = object["revision"]
            else { throw DataSetTransferError("a header needs format, schema, schemaVersion and revision") }
            var schemaLines: [String] = []
            for line in lines {
                guard case .string(let text) = line else { throw DataSetTransferError("a schema line is not a string") }
                schemaLines.append(text)
            }
            guard let format = Int(exactly: format), let version = Int(exactly: version) else { throw DataSetTransferError("a header number is out of range") }
            return .header(DataSetHeader(format: format, schemaLines: schemaLines, schemaVersion: version, revision: revision))
        }
        if case .string(let name)? = object["table"] {
            guard let table = TransferTable.named(name) else { throw DataSetTransferError("no table \(name.debugDescription) is copied") }
            guard case .array(let cells)? = object["row"], cells.count == table.columns.count else {
                throw DataSetTransferError("a row of \(name) needs \(table.columns.count) values")
            }
            var row: [TransferCell] = []
            for (cell, column) in zip(cells, table.columns) {
                guard let decoded = decode(cell, column.kind), decoded != .null || column.nullable else {
                    throw DataSetTransferError("\(name).\(column.name): expected \(column.kind)\(column.nullable ? " or null" : "")")
                }
                row.append(decoded)
            }
            return .row(table, row)
        }
        if case .string(let name)? = object["entity"] {
            guard let position = schema.entities.firstIndex(where: { $0.name == name }) else {
                throw DataSetTransferError("the schema has no entity \(name.debugDescription)")
            }
            let entity = schema.entities[position]
            guard let document = object["record"], case .integer(let revision)? = object["revision"], case .integer(let created)? = object["created"]
            else { throw DataSetTransferError("a record line needs record, revision and created") }
            let record: Record
            do { record = try RecordDocument.decode(document, entity: entity, path: "$.record") } catch {
                throw DataSetTransferError("\(name): \(error)")
            }
            var fieldRevisions: ContiguousArray<Int64>?
            switch object["fieldRevisions"] {
            case nil, .null?: fieldRevisions = nil
            case .array(let items)?:
                fieldRevisions = []
                for item in items {
                    guard case .integer(let number) = item else { throw DataSetTransferError("\(name) \(record.id): a field revision is not an integer") }
                    fieldRevisions!.append(number)
                }
            default: throw DataSetTransferError("\(name) \(record.id): fieldRevisions is neither an array nor null")
            }
            var root: Int64?
            switch object["root"] {
            case nil, .null?: root = nil
            case .integer(let number)?: root = number
            default: throw DataSetTransferError("\(name) \(record.id): root is neither an integer nor null")
            }
            return .record(entity: position, ServerRow(record: record, revision: revision, created: created, fieldRevisions: fieldRevisions, root: root))
        }
        if case .object(let end)? = object["end"] {
            func counts(_ key: String) throws(DataSetTransferError) -> [String: Int] {
                guard case .object(let members)? = end[key] else { throw DataSetTransferError("the last line needs \(key)") }
                var result: [String: Int] = [:]
                for (name, number) in members {
                    guard case .integer(let count) = number, count >= 0, let value = Int(exactly: count) else {
                        throw DataSetTransferError("the count of \(name) is not a count")
                    }
                    result[name] = value
                }
                return result
            }
            return .end(DataSetCounts(tables: try counts("tables"), records: try counts("records")))
        }
        throw DataSetTransferError("neither a header, a row, a record nor the last line")
    }

    private static func encode(_ cell: TransferCell) -> JSONValue {
        switch cell {
        case .null: .null
        case .integer(let number): .integer(number)
        case .text(let text): .string(text)
        case .bytes(let bytes): .string(Data(bytes).base64EncodedString())
        }
    }

    private static func decode(_ value: JSONValue, _ kind: TransferTable.Kind) -> TransferCell? {
        switch (value, kind) {
        case (.null, _): return .null
        case (.integer(let number), .integer): return .integer(number)
        case (.string(let text), .text): return .text(text)
        case (.string(let text), .bytes): return Data(base64Encoded: text).map { .bytes(Array($0)) }
        default: return nil
        }
    }
}
