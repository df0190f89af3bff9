import FieldMerge

// Schemas that several test targets use (not a product: only tests link it).

/// Lists and their tasks: a reference with a cascade, a counter.
public func syncSchema() throws -> Schema {
    try Schema([
        Entity("lists", fields: [Field("name", .text)]),
        Entity("tasks", fields: [
            Field("title", .text), Field("done", .bool), Field("count", .integer, strategy: .counter),
            Field("listID", .reference(to: "lists", onDelete: .cascade)),
        ]),
    ])
}

/// The objc.io case study's schema: screens, their instances and the instances' items.
public func caseStudySchema(restrictItems: Bool = false) throws -> Schema {
    try Schema([
        Entity("screens", fields: [Field("name", .text)]),
        Entity("screen_instances", fields: [
            Field("screen_id", .reference(to: "screens", onDelete: .cascade)), Field("date", .date), Field("comment", .text),
        ]),
        Entity("screen_instance_items", fields: [
            Field("screen_instance_id", .reference(to: "screen_instances", onDelete: restrictItems ? .restrict : .cascade)),
            Field("numeric_value", .integer),
        ]),
    ])
}
