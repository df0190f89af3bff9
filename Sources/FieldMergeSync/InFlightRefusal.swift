import FieldMergeProtocol

/// What a refusal of the request in flight says of it (Specs/store.md, "A request in
/// flight"): whether the server read the bytes the client sent and refused them as they
/// stand, so that they can be forgotten, or not.
///
/// The server looks up a request's id before anything else it decides about the request
/// (`RevisionServer.handle`): a retry of bytes an earlier attempt delivered is answered with
/// that attempt's reply, never refused. A refusal of the same bytes therefore proves they
/// were never taken, unless it came before the server could read them.
enum InFlightRefusal: Equatable {
    /// The server read the request and refused it as it stands (a schema or protocol version
    /// it does not share, a body over its limits, a request it cannot process): it changed
    /// nothing and would refuse it again.
    case refused
    /// The server did not read the request: no valid token (401), or a data set the sender
    /// may not reach (403). Nothing is known of an earlier attempt.
    case notRead
    /// The server took a request under this id with other change sets (422
    /// `idempotencyMismatch`): maybe this very one, altered on the way, whose answer was
    /// lost. Forgetting it could send its changes twice, so it stays in flight and every
    /// sync fails with this refusal until a retry is answered (or the server's stored reply
    /// is pruned and the request taken anew).
    case idTaken
    /// The server read bytes the client never sent: a decode error of JSON or gzip that the
    /// client itself wrote with the server's schema (its fingerprint is read before any
    /// change set), so they were damaged on the way. Retryable, as a transport failure.
    case damagedOnTheWay

    init(_ refusal: SyncRequestRejected) {
        switch refusal.status {
        case 401, 403:
            self = .notRead
        case 422 where refusal.code == "idempotencyMismatch":
            self = .idTaken
        case 400 where WireError.Code(rawValue: refusal.code).map(Self.isDamage) == true:
            self = .damagedOnTheWay
        default:
            self = .refused
        }
    }

    /// Decode errors that a body written by a FieldMerge client of the same schema never
    /// gets: the size limits and a schema the server does not share are not among them.
    private static func isDamage(_ code: WireError.Code) -> Bool {
        switch code {
        case .malformedJSON, .unexpectedType, .outOfRange, .tooDeep, .unknownEntity, .unknownField, .invalidValue,
            .duplicateKey, .gzipCorrupt, .gzipTruncated:
            true
        case .tooLarge, .gzipTooLarge, .incompatibleSchema:
            false
        }
    }
}
