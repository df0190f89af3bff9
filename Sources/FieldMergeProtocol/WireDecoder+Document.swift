import FieldMerge

/// Reading documents: the top level, change sets, entity objects. Keys may come in any
/// order; a change set's `types` may follow the entity objects it lists.
extension _Parser {
    mutating func parseRequest(_ codec: WireCodec) throws(WireError) -> SyncRequest {
        var codec = codec
        let objectAt = try documentStart()
        var maxRevision: Int64?, changeSets: [ChangeSet]?
        var clientID: String?, requestID: String?, limit: Int?, version: Int?
        var schemaVersion: Int?, schemaFingerprint: String?, scopes: ScopeHoldings?
        var subscriptions: ScopeHoldings?, priority: ScopeHoldings?, horizon: Int64?
        var seen: UInt16 = 0
        if try open(UInt8(ascii: "{"), "an object (the request)") {
            repeat {
                switch try member(Self.requestKeys, &seen).known {
                case 0: maxRevision = try nonNegativeInt64("maxRevision")
                case 1: changeSets = try parseChangeSets(codec)
                case 2: clientID = try optionalText("clientID")
                case 3: requestID = try optionalText("requestID")
                case 4: limit = try positiveInt("limit")
                case 5: version = try positiveInt("protocolVersion")
                case 6: schemaVersion = try positiveInt("schemaVersion")
                case 7:
                    schemaFingerprint = try optionalText("schemaFingerprint")
                    // Checked as soon as it is read: FieldMerge clients send it before their
                    // change sets, which another schema could not read. An older version
                    // the codec knows reads them with its own codec.
                    if let fingerprint = schemaFingerprint, seen & 2 == 0, let older = codec.olderVersions[fingerprint] {
                        codec = older.codec
                    }
                    if let fingerprint = schemaFingerprint, fingerprint != codec.schemaFingerprint {
                        throw Self.incompatible(codec, version: schemaVersion, fingerprint: fingerprint)
                    }
                case 8: scopes = try parseScopes()
                case 9: subscriptions = try parseScopes(allowingAll: false)
                case 10: priority = try parseScopes(allowingAll: false)
                case 11: horizon = try nonNegativeInt64("horizon")
                default: try skipValue()  // unknown top-level keys: forward compatibility
                }
            } while try next(UInt8(ascii: "}"))
        }
        try finish()
        guard let maxRevision else { throw error(.invalidValue, "the request has no maxRevision", at: objectAt) }
        guard let changeSets else { throw error(.invalidValue, "the request has no changeSets", at: objectAt) }
        return SyncRequest(
            maxRevision: maxRevision, changeSets: changeSets, clientID: clientID, requestID: requestID, limit: limit,
            protocolVersion: version, schemaVersion: schemaVersion, schemaFingerprint: schemaFingerprint, scopes: scopes,
            subscriptions: subscriptions, priority: priority, horizon: horizon)
    }

    /// The top-level `schemaFingerprint` of a request, every other value skipped; nil when
    /// it has none.
    mutating func peekSchemaFingerprint() throws(WireError) -> String? {
        _ = try documentStart()
        var fingerprint: String?
        if try open(UInt8(ascii: "{"), "an object (the request)") {
            repeat {
                let key = try key()
                if key.equals("schemaFingerprint") { fingerprint = try optionalText("schemaFingerprint") } else { try skipValue() }
            } while try next(UInt8(ascii: "}"))
        }
        return fingerprint
    }

    /// With `pieces`, every record is handed to it once, in document order, and the
    /// response returned holds no records (``WireCodec/decodeResponse(_:piecesOf:_:)``).
    mutating func parseResponse(_ codec: WireCodec, pieces: _Pieces? = nil) throws(WireError) -> SyncResponse {
        let objectAt = try documentStart()
        var maxRevision: Int64?, changeSets: [ChangeSet]?, hasMore = false, scopes: ScopeHoldings?
        var denied: ScopeHoldings?, horizon: Int64?
        var seen: UInt16 = 0
        if try open(UInt8(ascii: "{"), "an object (the response)") {
            repeat {
                switch try member(Self.responseKeys, &seen).known {
                case 0: maxRevision = try nonNegativeInt64("maxRevision")
                case 1: changeSets = try parseChangeSets(codec, pieces: pieces)
                case 2: hasMore = try null() ? false : try bool("hasMore (a bool)")
                case 3: scopes = try parseScopes()
                case 4: denied = try parseScopes(allowingAll: false)
                case 5: horizon = try nonNegativeInt64("horizon")
                default: try skipValue()
                }
            } while try next(UInt8(ascii: "}"))
        }
        try finish()
        guard let maxRevision else { throw error(.invalidValue, "the response has no maxRevision", at: objectAt) }
        guard let changeSets else { throw error(.invalidValue, "the response has no changeSets", at: objectAt) }
        return SyncResponse(
            maxRevision: maxRevision, changeSets: changeSets, hasMore: hasMore, scopes: scopes, deniedSubscriptions: denied,
            horizon: horizon)
    }

    mutating func parseErrorBody() throws(WireError) -> WireErrorBody {
        let objectAt = try documentStart()
        var code: String?, message: String?, schema: [String]?
        var seen: UInt16 = 0
        if try open(UInt8(ascii: "{"), "an object (an error body)") {
            repeat {
                switch try member(Self.errorKeys, &seen).known {
                case 0: code = try text("error (a string)")
                case 1: message = try text("message (a string)")
                case 2:
                    var lines: [String] = []
                    if try open(UInt8(ascii: "["), "an array of schema lines") {
                        repeat { lines.append(try text("a schema line (a string)")) } while try next(UInt8(ascii: "]"))
                    }
                    schema = lines
                default: try skipValue()
                }
            } while try next(UInt8(ascii: "}"))
        }
        try finish()
        guard let code else { throw error(.invalidValue, "the error body has no error code", at: objectAt) }
        var body = WireErrorBody(error: code, message: message ?? "")
        body.schema = schema
        return body
    }

    // MARK: Helpers

    private mutating func documentStart() throws(WireError) -> Int {
        skipSpace()
        guard position < end else { throw error(.malformedJSON, "empty body", at: position) }
        return position
    }

    mutating func text(_ what: String) throws(WireError) -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw typeError(expected: what) }
        return try string().text
    }

    private mutating func optionalText(_ what: String) throws(WireError) -> String? {
        try null() ? nil : try text("\(what) (a string)")
    }

    /// `"scopes": {"name": [ids] or "*", ...}` (null: absent). Ids may come in any order and
    /// repeat; they are kept sorted, once each. Without `allowingAll`, ids only (subscriptions
    /// and priorities name roots).
    private mutating func parseScopes(allowingAll: Bool = true) throws(WireError) -> ScopeHoldings? {
        if try null() { return nil }
        var holdings = ScopeHoldings()
        if try open(UInt8(ascii: "{"), "an object of scopes") {
            repeat {
                let name = try key()
                guard name.count > 0 else { throw error(.invalidValue, "a scope name must not be empty", at: name.offset) }
                guard holdings[name.text] == nil else {
                    throw error(.duplicateKey, "duplicate scope '\(name.text)'", at: name.offset)
                }
                if try peek() == UInt8(ascii: "\"") {
                    let all = try string()
                    guard all.equals("*"), allowingAll else {
                        throw error(
                            .invalidValue,
                            allowingAll ? "a scope holds an array of root ids or \"*\"" : "expected an array of root ids for scope '\(name.text)'",
                            at: all.offset)
                    }
                    holdings[name.text] = .all
                } else {
                    holdings[name.text] = .ids(try parseIDs("scope '\(name.text)'"))
                }
            } while try next(UInt8(ascii: "}"))
        }
        return holdings
    }

    /// An integer within 1...Int32.max, or null (the limit, the versions).
    private mutating func positiveInt(_ what: String) throws(WireError) -> Int? {
        if try null() { return nil }
        let start = position
        let value = try int64("\(what) (an integer)")
        guard value >= 1, value <= Int64(Int32.max) else {
            throw error(.outOfRange, "\(what) must be within 1...\(Int32.max)", at: start)
        }
        return Int(value)
    }

    // MARK: Change sets

    private mutating func parseChangeSets(_ codec: WireCodec, pieces: _Pieces? = nil) throws(WireError) -> [ChangeSet] {
        var changeSets: [ChangeSet] = []
        if try open(UInt8(ascii: "["), "an array of change sets") {
            repeat {
                changeSets.append(try parseChangeSet(codec, pieces: pieces))
            } while try next(UInt8(ascii: "]"))
        }
        return changeSets
    }

    /// With `pieces`, an entity object's records are handed on as they are read when the
    /// change set's `types` (which must list the entity) and the object's `create` and
    /// `delete` came before them, as FieldMerge writes them; otherwise once the change set
    /// has been read and checked.
    private mutating func parseChangeSet(_ codec: WireCodec, pieces: _Pieces? = nil) throws(WireError) -> ChangeSet {
        _ = try peek()
        let objectAt = position
        var types: [Int]?, typesAt = objectAt
        var conflict: Bool?
        var refused: [RefusedRecord] = []
        var seen: UInt16 = 0
        var objects: [(entity: Int, changes: EntityChanges, keyAt: Int)] = []
        if try open(UInt8(ascii: "{"), "a change set object") {
            repeat {
                let (known, key) = try member(Self.changeSetKeys, &seen)
                switch known {
                case 0:
                    typesAt = position
                    types = try parseTypes(codec)
                case 1: conflict = try null() ? nil : try bool("conflict (a bool)")
                case 2: refused = try parseRefused(codec)
                default:
                    let name = key.text
                    let entity = try entityPosition(name, codec, at: key.offset)
                    guard !objects.contains(where: { $0.entity == entity }) else {
                        throw error(.duplicateKey, "duplicate key '\(name)'", at: key.offset)
                    }
                    let listed = types?.contains(entity) == true
                    let changes = try parseEntity(codec.tables[entity], pieces: listed ? pieces : nil)
                    objects.append((entity, changes, key.offset))
                }
            } while try next(UInt8(ascii: "}"))
        }
        guard let types else { throw error(.invalidValue, "a change set without \"types\"", at: objectAt) }
        for object in objects where !types.contains(object.entity) {
            throw error(
                .invalidValue, "entity '\(codec.tables[object.entity].name)' is not listed in the change set's types",
                at: object.keyAt)
        }
        var entities: [EntityChanges] = []
        entities.reserveCapacity(types.count)
        for entity in types {
            guard let object = objects.first(where: { $0.entity == entity }) else {
                throw error(
                    .invalidValue, "type '\(codec.tables[entity].name)' is listed without its object", at: typesAt)
            }
            entities.append(object.changes)
        }
        if let pieces {
            // Records not handed on while read (their lists or types came after them).
            for index in entities.indices where !entities[index].records.isEmpty {
                let lists = _PieceLists(entities[index])
                var start = 0
                let records = entities[index].records
                while start < records.count {
                    let end = min(start + pieces.size, records.count)
                    try pieces.sink(lists.piece(Array(records[start..<end])))
                    start = end
                }
                entities[index].records = []
            }
        }
        return ChangeSet(entities: entities, conflict: conflict, refused: refused)
    }

    /// `"__refused__": [{"type", "id", "code", "message"}, …]`.
    private mutating func parseRefused(_ codec: WireCodec) throws(WireError) -> [RefusedRecord] {
        var refused: [RefusedRecord] = []
        guard try open(UInt8(ascii: "["), "an array of refused records") else { return refused }
        repeat {
            let objectAt = position
            var entity: String?, id: Int64?, code: String?, message: String?
            var seen: UInt16 = 0
            if try open(UInt8(ascii: "{"), "a refused record object") {
                repeat {
                    switch try member(Self.refusedKeys, &seen).known {
                    case 0:
                        let at = position
                        let name = try text("type (a string)")
                        _ = try entityPosition(name, codec, at: at)
                        entity = name
                    case 1: id = try int64("id (an integer)")
                    case 2: code = try text("code (a string)")
                    case 3: message = try text("message (a string)")
                    default: try skipValue()
                    }
                } while try next(UInt8(ascii: "}"))
            }
            guard let entity, let id, let code else {
                throw error(.invalidValue, "a refused record needs type, id and code", at: objectAt)
            }
            refused.append(RefusedRecord(entity: entity, id: id, code: code, message: message ?? ""))
        } while try next(UInt8(ascii: "]"))
        return refused
    }

    /// The position of the entity named `name` in `codec`'s schema: unknown entities and
    /// retired ones (``Entity/retired``), which this version never sends, are refused.
    private func entityPosition(_ name: String, _ codec: WireCodec, at offset: Int) throws(WireError) -> Int {
        guard let entity = codec.entityIndex[name] else { throw error(.unknownEntity, "unknown entity '\(name)'", at: offset) }
        guard !codec.tables[entity].retired else {
            throw error(.unknownEntity, "entity '\(name)' is retired in this schema version", at: offset)
        }
        return entity
    }

    private mutating func parseTypes(_ codec: WireCodec) throws(WireError) -> [Int] {
        var types: [Int] = []
        if try open(UInt8(ascii: "["), "an array of entity names") {
            repeat {
                guard try peek() == UInt8(ascii: "\"") else { throw typeError(expected: "an entity name") }
                let name = try string()
                let entity = try entityPosition(name.text, codec, at: name.offset)
                guard !types.contains(entity) else {
                    throw error(.duplicateKey, "entity '\(name.text)' listed twice in types", at: name.offset)
                }
                types.append(entity)
            } while try next(UInt8(ascii: "]"))
        }
        return types
    }

    // MARK: Entity objects

    private mutating func parseEntity(_ table: _EntityTable, pieces: _Pieces? = nil) throws(WireError) -> EntityChanges {
        var changes = EntityChanges(entity: table.name)
        var seen: UInt16 = 0
        if try open(UInt8(ascii: "{"), "an entity object") {
            repeat {
                let (known, key) = try member(Self.entityKeys, &seen)
                switch known {
                case 0:
                    // `create` and `delete` (bits 1 and 3) read: the records go on as they come.
                    if let pieces, seen & 0b1010 == 0b1010 {
                        let lists = _PieceLists(changes)
                        try parseAttributes(table, every: pieces.size) { (records) throws(WireError) in try pieces.sink(lists.piece(records)) }
                    } else {
                        changes.records = try parseAttributes(table)
                    }
                case 1: changes.create = try parseIDs("create")
                case 2: changes.update = try parseIDs("update")
                case 3: changes.delete = try parseIDs("delete")
                case 4: changes.recreate = try parseIDs("recreate")
                case 5: changes.leave = try parseIDs("leave")
                default:
                    throw error(
                        .unknownField, "unknown key '\(key.text)' in the object of '\(table.name)'", at: key.offset)
                }
            } while try next(UInt8(ascii: "}"))
        }
        return changes
    }

    private mutating func parseIDs(_ list: String) throws(WireError) -> [Int64] {
        var ids: [Int64] = []
        if try open(UInt8(ascii: "["), "an array of ids") {
            repeat {
                ids.append(try int64("an integer id in \(list)"))
            } while try next(UInt8(ascii: "]"))
        }
        return ids
    }

    /// `"attributes": {"<id>": {...}, ...}`. Duplicate ids are found without a hash set
    /// while ids run monotonically (the usual case); a set takes over when they do not.
    ///
    /// With `emit`, the records go to it in runs of `every` as they are read (the ids of
    /// those gone on are kept for the check), and none are returned.
    @discardableResult
    private mutating func parseAttributes(
        _ table: _EntityTable, every: Int = .max, emit: ((_ records: [WireRecord]) throws(WireError) -> Void)? = nil
    ) throws(WireError) -> [WireRecord] {
        var records: [WireRecord] = []
        var last: Int64 = 0, direction = 0, count = 0
        var seen: Set<Int64>?
        var handedOn: [Int64] = []
        if try open(UInt8(ascii: "{"), "an attributes object") {
            repeat {
                let key = try key()
                let id = try idKey(key)
                if var ids = seen {
                    seen = nil
                    let inserted = ids.insert(id).inserted
                    seen = ids
                    guard inserted else { throw duplicateID(key) }
                } else if count > 0 {
                    let step = id > last ? 1 : id < last ? -1 : 0
                    if step == 0 { throw duplicateID(key) }
                    if direction == 0 { direction = step }
                    if step != direction {
                        var ids = Set(handedOn)
                        ids.formUnion(records.lazy.map(\.id))
                        handedOn = []
                        guard ids.insert(id).inserted else { throw duplicateID(key) }
                        seen = ids
                    }
                }
                last = id
                count += 1
                records.append(try parseRecord(id: id, table))
                if let emit, records.count >= every {
                    if seen == nil { handedOn.append(contentsOf: records.lazy.map(\.id)) }
                    try emit(records)
                    records.removeAll(keepingCapacity: true)
                }
            } while try next(UInt8(ascii: "}"))
        }
        if let emit {
            if !records.isEmpty { try emit(records) }
            return []
        }
        return records
    }

    private func duplicateID(_ key: _Span) -> WireError {
        error(.duplicateKey, "duplicate record id '\(key.text)' in attributes", at: key.offset)
    }

    /// An attribute key: an integer in canonical decimal (`"-10"`, not `"+10"` or `"010"`).
    private func idKey(_ key: _Span) throws(WireError) -> Int64 {
        let bytes = key.buffer
        let negative = bytes.first == UInt8(ascii: "-")
        let digits = negative ? bytes.count - 1 : bytes.count
        let first = negative ? 1 : 0
        let canonical = digits > 0 && bytes[first...].allSatisfy(Self.isDigit)
            && (bytes[first] != UInt8(ascii: "0") || (digits == 1 && !negative))
        guard canonical else {
            throw error(.invalidValue, "attribute key '\(key.text)' is not an integer id", at: key.offset)
        }
        var magnitude: UInt64 = 0
        for digit in bytes[first...] {
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(UInt64(digit &- 48))
            guard !o1, !o2 else { throw error(.outOfRange, "attribute key '\(key.text)' is beyond Int64", at: key.offset) }
            magnitude = plus
        }
        guard magnitude <= (negative ? UInt64(Int64.max) + 1 : UInt64(Int64.max)) else {
            throw error(.outOfRange, "attribute key '\(key.text)' is beyond Int64", at: key.offset)
        }
        return negative ? Int64(truncatingIfNeeded: 0 &- magnitude) : Int64(magnitude)
    }
}
