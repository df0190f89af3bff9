import FieldMergeProtocol

extension RevisionServer {
    /// What the write transaction answering `requests` may take (``WriteReservation``): a
    /// revision per change set and an id per temporary id created, counted from the requests
    /// before any of them runs. An unknown entity takes nothing (its change set is refused).
    func reservation(for requests: [SyncRequest]) -> WriteReservation {
        var (revisions, ids) = (0, [Int: Int]())
        for request in requests {
            revisions += request.changeSets.count
            for changes in request.changeSets.flatMap(\.entities) where !changes.create.isEmpty {
                guard let position = positions[changes.entity] else { continue }
                ids[position, default: 0] += changes.create.count
            }
        }
        return WriteReservation(revisions: revisions, ids: ids, clock: clock.last)
    }
}
