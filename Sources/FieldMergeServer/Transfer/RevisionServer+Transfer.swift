import FieldMerge

extension RevisionServer {
    /// The server's whole data set as ``DataSetReader`` reads it, in one read transaction
    /// between two requests (requests wait while it is read): what tests compare a copy
    /// with. Tools copy a data set through their own storage (`fieldmerge admin copy`),
    /// never holding it whole.
    ///
    /// - Throws: ``ServerError/Code/badRequest`` when the storage cannot be copied
    ///   (``TransferableServerStorage``); the storage's failures.
    package func dataSetItems() async throws -> [DataSetItem] {
        guard let storage = storage as? any TransferableServerStorage else {
            throw ServerError(.badRequest, "this server's storage cannot be copied")
        }
        await turnstile.enter()
        defer { turnstile.leave() }
        return try await Self.read(storage, schema: schema)
    }

    private nonisolated(nonsending) static func read<Storage: TransferableServerStorage>(_ storage: Storage, schema: Schema) async throws -> [DataSetItem] {
        try await storage.read {
            let reader = DataSetReader(storage, schema: schema)
            var items: [DataSetItem] = []
            while let item = try await reader.next() { items.append(item) }
            return items
        }
    }
}
