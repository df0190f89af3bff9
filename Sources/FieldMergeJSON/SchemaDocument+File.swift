import FieldMerge
import Foundation

extension SchemaDocument {
    /// The schema of a schema file (Specs/schema.md): what `fieldmerge serve --schema`,
    /// `fieldmerge sync --schema` and `fieldmerge schema diff` read.
    ///
    /// - Throws: ``DocumentError`` whose path is the file when it cannot be read, else the
    ///   JSON path of what is wrong in it.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - customStrategies: The app's field strategies, by the names the file uses.
    ///   - recordStrategies: The app's record rules, by the names the file uses.
    public static func load(
        contentsOf path: String, customStrategies: [String: FieldStrategy] = [:],
        recordStrategies: [String: any RecordMergeStrategy] = [:]
    ) throws(DocumentError) -> Schema {
        try decode(JSONValue.parse(try contents(path)), customStrategies: customStrategies, recordStrategies: recordStrategies)
    }

    /// The outline and version of a schema file, its custom strategies and record rules
    /// kept by name (``outline(_:path:)``): what `fieldmerge schema diff` compares.
    public static func loadOutline(contentsOf path: String) throws(DocumentError) -> (outline: SchemaOutline, version: Int) {
        try outline(JSONValue.parse(try contents(path)))
    }

    private static func contents(_ path: String) throws(DocumentError) -> Data {
        guard let data = fileContents(atPath: path) else {
            throw DocumentError(path: path, message: "cannot read the file")
        }
        return data
    }
}
