import FieldMergeSync

/// An app writing while a sync runs: an empty `write { }` on the client every `interval`,
/// each timed from the call to its return (the wait for the client's executor and for the
/// catch-up's transaction, which the write commits first).
struct AppWrites {
    private let task: Task<[Double], any Error>

    static func start(on client: SyncClient, every interval: Duration) -> AppWrites {
        AppWrites(task: Task {
            var waits: [Double] = []
            while !Task.isCancelled {
                waits.append(try await seconds { try await client.write { _ in } })
                try? await Task.sleep(for: interval)
            }
            return waits
        })
    }

    /// Stops writing; the wait of each write, in seconds.
    func stop() async throws -> [Double] {
        task.cancel()
        return try await task.value
    }
}
