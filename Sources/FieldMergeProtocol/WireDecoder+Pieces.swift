/// Reading a response in pieces: its records are handed on while the rest is still being
/// read, so that a client can apply the first ones before the last are decoded and never
/// holds a whole decoded page (``WireCodec/decodeResponse(_:piecesOf:_:)``).
struct _Pieces {
    /// At most this many records per piece.
    let size: Int
    let sink: (EntityChanges) throws(WireError) -> Void
}

/// An entity object's `create` and `delete` lists, to say which records of a piece they name.
struct _PieceLists {
    let entity: String
    let created: Set<Int64>
    let deleted: Set<Int64>

    init(_ changes: EntityChanges) {
        entity = changes.entity
        created = Set(changes.create)
        deleted = Set(changes.delete)
    }

    /// `records` as changes of the entity, with the ids among them the lists name.
    func piece(_ records: [WireRecord]) -> EntityChanges {
        var piece = EntityChanges(entity: entity, records: records)
        if !created.isEmpty { piece.create = records.lazy.map(\.id).filter(created.contains) }
        if !deleted.isEmpty { piece.delete = records.lazy.map(\.id).filter(deleted.contains) }
        return piece
    }
}

extension WireCodec {
    /// Reads a response body, handing its records to `body` in pieces of at most `size`
    /// records of one entity while the rest is still being read.
    ///
    /// Each record goes to `body` once, with the ids among the piece's records that its
    /// entity object lists in `create` and `delete`. Pieces of one entity object come in
    /// document order, and all pieces of a change set come before any of the next. In a
    /// body written as FieldMerge writes it (`types` before the entity objects, `create`
    /// and `delete` before `attributes`), records go on as they are read; otherwise an
    /// object's records go on once its change set has been read and checked.
    ///
    /// The response returned is the body without its records: every change set, list and
    /// top-level value. A body found malformed after some pieces went on throws the
    /// error then: whoever applies pieces must be able to undo them (the sync client
    /// applies a page in one store transaction). An error thrown by `body` ends the
    /// reading and is rethrown as it is.
    public func decodeResponse(
        _ bytes: [UInt8], piecesOf size: Int, _ body: (EntityChanges) throws -> Void
    ) throws -> SyncResponse {
        precondition(size > 0, "a piece holds at least one record")
        var failure: (any Error)?
        do {
            return try withoutActuallyEscaping(body) { body in
                try bytes.withUnsafeBufferPointer { (buffer) throws(WireError) in
                    let raw = UnsafeRawBufferPointer(buffer)
                    try checkSize(raw)
                    var parser = _Parser(raw, limits: limits)
                    let pieces = _Pieces(size: size) { (piece) throws(WireError) in
                        do {
                            try body(piece)
                        } catch {
                            failure = error
                            throw WireError(.invalidValue, "stopped by the reader of the pieces", offset: 0)
                        }
                    }
                    return try parser.parseResponse(self, pieces: pieces)
                }
            }
        } catch {
            throw failure ?? error
        }
    }
}
