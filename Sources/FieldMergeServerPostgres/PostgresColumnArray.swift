import FieldMerge
import FieldMergeServer
import PostgresNIO

/// One column of a run of records, bound as one PostgreSQL array in the binary format, whose
/// elements may be NULL (PostgresNIO's own arrays cannot hold NULLs). A run of records is then
/// one parameter per column, whatever the number of records: `unnest($2::BIGINT[], ...)`
/// instead of a `VALUES` list of rows × columns parameters, which PostgreSQL parsed and
/// planned anew for every size of run (``PostgresServerTable/insertAndLogColumns``).
struct PostgresColumnArray: PostgresDynamicTypeEncodable {
    /// What the elements are; a text set travels as the text of a PostgreSQL array
    /// (`{"a","b"}`), which the statement casts.
    enum Element {
        case int8, float8, bool, text, textSet, bytea

        var oid: Int32 {
            switch self {
            case .int8: 20
            case .float8: 701
            case .bool: 16
            case .text, .textSet: 25
            case .bytea: 17
            }
        }

        var arrayType: PostgresDataType {
            switch self {
            case .int8: .int8Array
            case .float8: .float8Array
            case .bool: .boolArray
            case .text, .textSet: .textArray
            case .bytea: .byteaArray
            }
        }

        /// The element kind a field of `type` is bound as.
        init(_ type: FieldType) {
            switch type {
            case .integer, .date, .reference: self = .int8
            case .real: self = .float8
            case .bool: self = .bool
            case .text, .attachment: self = .text
            case .textSet: self = .textSet
            case .blob: self = .bytea
            }
        }
    }

    let element: Element
    private(set) var count = 0
    private var hasNull = false
    private var body: ByteBuffer

    init(_ element: Element, capacity: Int) {
        self.element = element
        body = ByteBufferAllocator().buffer(capacity: capacity * 12)
    }

    var psqlType: PostgresDataType { element.arrayType }
    var psqlFormat: PostgresFormat { .binary }

    mutating func appendNull() {
        body.writeInteger(Int32(-1))
        hasNull = true
        count += 1
    }

    mutating func append(_ value: Int64) {
        body.writeInteger(Int32(8))
        body.writeInteger(value)
        count += 1
    }

    mutating func append(_ value: Double) {
        body.writeInteger(Int32(8))
        body.writeInteger(value.bitPattern)
        count += 1
    }

    mutating func append(_ value: Bool) {
        body.writeInteger(Int32(1))
        body.writeInteger(UInt8(value ? 1 : 0))
        count += 1
    }

    mutating func append(text: String) {
        body.writeInteger(Int32(text.utf8.count))
        body.writeString(text)
        count += 1
    }

    mutating func append(bytes: [UInt8]) {
        body.writeInteger(Int32(bytes.count))
        body.writeBytes(bytes)
        count += 1
    }

    /// Appends a field's value as this column holds it; false when the value is not of the
    /// column's kind (the caller then binds the run row by row, as before).
    mutating func append(_ value: Value) throws(ServerError) -> Bool {
        switch (element, value) {
        case (_, .null): appendNull()
        case (.int8, .integer(let v)), (.int8, .date(let v)): append(v)
        case (.float8, .real(let v)): append(v)
        case (.bool, .bool(let v)): append(v)
        case (.text, .text(let v)): append(text: try PostgresServerStorage.storable(v))
        case (.textSet, .textSet(let set)):
            for member in set { _ = try PostgresServerStorage.storable(member) }
            append(text: Self.arrayLiteral(set.elements))
        case (.bytea, .blob(let v)): append(bytes: v)
        default: return false
        }
        return true
    }

    /// `members` as the text of a PostgreSQL array: each member quoted, its quotes and
    /// backslashes escaped with a backslash.
    static func arrayLiteral(_ members: [String]) -> String {
        var literal = "{"
        for (index, member) in members.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in member.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(Int32(1))  // dimensions
        buffer.writeInteger(Int32(hasNull ? 1 : 0))
        buffer.writeInteger(element.oid)
        buffer.writeInteger(Int32(count))
        buffer.writeInteger(Int32(1))  // lower bound
        var elements = body
        buffer.writeBuffer(&elements)
    }
}
