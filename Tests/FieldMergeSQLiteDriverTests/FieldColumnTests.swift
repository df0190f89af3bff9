import FieldMerge
import Testing
@testable import FieldMergeSQLiteDriver

/// How a field's column is read back (`Statement.value(_:as:)`): each kind takes its own
/// storage class (an integer also for a real, 0 and 1 for a bool) and refuses the others.
@Suite struct FieldColumnTests {
    @Test func eachKindReadsItsStorageClassAndRefusesTheOthers() throws {
        let db = try Database()
        try db.execute("CREATE TABLE v(x)")
        let stored: [SQLValue] = [.null, .integer(7), .integer(1), .real(2.5), .text("a"), .text("[\"b\",\"a\"]"), .blob([1, 2])]
        let expected: [ValueKind: [Value?]] = [
            .integer: [.null, .integer(7), .integer(1), nil, nil, nil, nil],
            .date: [.null, .date(7), .date(1), nil, nil, nil, nil],
            .bool: [.null, nil, .bool(true), nil, nil, nil, nil],
            .real: [.null, .real(7), .real(1), .real(2.5), nil, nil, nil],
            .text: [.null, nil, nil, nil, .text("a"), .text("[\"b\",\"a\"]"), nil],
            .textSet: [.null, nil, nil, nil, nil, .textSet(TextSet(["a", "b"])), nil],
            .blob: [.null, nil, nil, nil, nil, nil, .blob([1, 2])],
        ]
        for (position, value) in stored.enumerated() {
            try db.run("DELETE FROM v")
            try db.run("INSERT INTO v(x) VALUES (?)", [value])
            let statement = try db.statement("SELECT x FROM v")
            #expect(try statement.step())
            for (kind, values) in expected {
                #expect(statement.value(0, as: kind) == values[position], "\(value) read as \(kind)")
            }
            statement.reset()
        }
        // The field type's own overload reads as its kind: a reference as an integer.
        try db.run("DELETE FROM v")
        try db.run("INSERT INTO v(x) VALUES (?)", [.integer(3)])
        let statement = try db.statement("SELECT x FROM v")
        #expect(try statement.step())
        #expect(statement.value(0, as: FieldType.reference(to: "lists", onDelete: .cascade)) == .integer(3))
        #expect(statement.value(0, as: FieldType.attachment) == nil)
        statement.reset()
    }
}
