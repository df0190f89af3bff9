import FieldMergeProtocol

extension RevisionServer {
    /// What the write transaction answering `writes` may take (``WriteReservation``): a
    /// revision per change set and an id per temporary id created, counted from the requests
    /// before any of them runs, and the clients whose stored replies it looks up. An unknown
    /// entity takes nothing (its change set is refused).
    func reservation(for writes: [QueuedWrite]) -> WriteReservation {
        var (revisions, ids) = (0, [Int: Int]())
        for request in writes.map(\.request) {
            revisions += request.changeSets.count
            for changes in request.changeSets.flatMap(\.entities) where !changes.create.isEmpty {
                guard let position = positions[changes.entity] else { continue }
                ids[position, default: 0] += changes.create.count
            }
        }
        var reservation = WriteReservation(revisions: revisions, ids: ids, clock: clock.last)
        reservation.replyKeys = writes.compactMap { $0.request.requestID == nil ? nil : $0.replyKey }
        return reservation
    }
}
