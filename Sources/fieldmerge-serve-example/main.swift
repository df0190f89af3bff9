// An app's own server in ten lines: `fieldmerge-server serve` with every flag, serving a
// schema whose strategy is the app's Swift code (the shorter text wins a conflict), which a
// schema file cannot name for the stock executable. ServeCommandLibraryTests runs it; the
// DocC article ServingAnAppsSchema shows it (DocSnippets).
import FieldMerge
import FieldMergeServeCommand

// ServingAnAppsSchema.md block begin
let shortest = FieldStrategy.custom("shortest") { input in
    guard case .text(let local) = input.local, case .text(let remote) = input.remote else { return input.lastEdit }
    return local.count <= remote.count ? input.local : input.remote
}
let schema = try Schema([Entity("notes", fields: [Field("body", .text, strategy: shortest)])])
await FieldMergeServe.main(schema: schema)
// ServingAnAppsSchema.md block end
