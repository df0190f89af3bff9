import FieldMerge
import FieldMergeDataSetFile
import FieldMergeServer
import Foundation

/// A schema with every field type, for the lines the `dataset` target reads.
let dataSetFuzzSchema: Schema = {
    do {
        return try Schema([
            Entity("notes", fields: [
                Field("title", .text), Field("tags", .textSet), Field("weight", .real), Field("done", .bool),
                Field("due", .date), Field("photo", .blob), Field("parent", .reference(to: "notes", onDelete: .setNull)),
                Field("count", .integer, strategy: .counter),
            ]),
        ])
    } catch { fatalError("\(error)") }
}()

/// Any bytes: one line of an exported data set or a `DataSetTransferError`; a line read
/// writes out to a line that reads back and writes out the same (`admin import` reads
/// files an operator may have edited).
func fuzzDataSetLine(_ bytes: UnsafeRawBufferPointer) {
    guard let item = try? DataSetLines.decode(Data(bytes), schema: dataSetFuzzSchema) else { return }
    let written = DataSetLines.encode(item, schema: dataSetFuzzSchema)
    require(!written.contains("\n"), "a written line holds a newline: \(written)")
    let again: DataSetItem
    do {
        again = try DataSetLines.decode(Data(written.utf8), schema: dataSetFuzzSchema)
    } catch {
        fatalError("fuzz property failed: a written line does not read back: \(error)\n\(written)")
    }
    require(DataSetLines.encode(again, schema: dataSetFuzzSchema) == written, "a line changed through decode and encode:\n\(written)")
}
