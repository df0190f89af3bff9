import FieldMerge
import Foundation

extension SchemaDocument {
    /// The schema of a schema file (Specs/schema.md): what `fieldmerge serve --schema`,
    /// `fieldmerge sync --schema` and `fieldmerge schema diff` read.
    ///
    /// - Throws: ``DocumentError`` whose path is the file when it cannot be read, else the
    ///   JSON path of what is wrong in it.
    public static func load(contentsOf path: String) throws(DocumentError) -> Schema {
        guard let data = fileContents(atPath: path) else {
            throw DocumentError(path: path, message: "cannot read the file")
        }
        return try decode(JSONValue.parse(data))
    }
}
