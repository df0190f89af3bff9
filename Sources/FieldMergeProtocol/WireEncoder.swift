import FieldMerge

/// Writing documents: compact JSON, keys in a fixed order (small keys first, so a reader
/// sees `maxRevision` and the extensions before megabytes of change sets).
extension WireCodec {
    func writeRequest(_ request: SyncRequest, to writer: inout _Writer) {
        writer.raw("{\"maxRevision\":")
        writer.integer(request.maxRevision)
        if let version = request.protocolVersion {
            writer.raw(",\"protocolVersion\":")
            writer.integer(Int64(version))
        }
        if let version = request.schemaVersion {
            writer.raw(",\"schemaVersion\":")
            writer.integer(Int64(version))
        }
        if let fingerprint = request.schemaFingerprint {
            writer.raw(",\"schemaFingerprint\":")
            writer.string(fingerprint)
        }
        if let clientID = request.clientID {
            writer.raw(",\"clientID\":")
            writer.string(clientID)
        }
        if let requestID = request.requestID {
            writer.raw(",\"requestID\":")
            writer.string(requestID)
        }
        if let limit = request.limit {
            precondition(limit > 0 && limit <= Int(Int32.max), "limit must be within 1...2^31-1, got \(limit)")
            writer.raw(",\"limit\":")
            writer.integer(Int64(limit))
        }
        if let scopes = request.scopes { writeScopes(scopes, key: "scopes", to: &writer) }
        if let roots = request.subscriptions { writeScopes(roots, key: "subscriptions", to: &writer) }
        if let roots = request.priority { writeScopes(roots, key: "priority", to: &writer) }
        if let horizon = request.horizon {
            writer.raw(",\"horizon\":")
            writer.integer(horizon)
        }
        writer.raw(",\"changeSets\":")
        writeChangeSets(request.changeSets, to: &writer)
        writer.byte(UInt8(ascii: "}"))
    }

    func writeResponse(_ response: SyncResponse, to writer: inout _Writer) {
        writer.raw("{\"maxRevision\":")
        writer.integer(response.maxRevision)
        if response.hasMore { writer.raw(",\"hasMore\":true") }
        if let scopes = response.scopes { writeScopes(scopes, key: "scopes", to: &writer) }
        if let denied = response.deniedSubscriptions { writeScopes(denied, key: "deniedSubscriptions", to: &writer) }
        if let horizon = response.horizon {
            writer.raw(",\"horizon\":")
            writer.integer(horizon)
        }
        writer.raw(",\"changeSets\":")
        writeChangeSets(response.changeSets, to: &writer)
        writer.byte(UInt8(ascii: "}"))
    }

    /// `,"<key>":{"name":[ids]|"*",...}`, scopes by name.
    private func writeScopes(_ holdings: ScopeHoldings, key: StaticString, to writer: inout _Writer) {
        writer.raw(",\"")
        writer.raw(key)
        writer.raw("\":{")
        for (position, name) in holdings.scopes.keys.sorted().enumerated() {
            if position > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.string(name)
            writer.byte(UInt8(ascii: ":"))
            switch holdings.scopes[name]! {
            case .all: writer.raw("\"*\"")
            case .some(let ids): writeIDs(ids, to: &writer)
            }
        }
        writer.byte(UInt8(ascii: "}"))
    }

    private func writeChangeSets(_ changeSets: [ChangeSet], to writer: inout _Writer) {
        writer.byte(UInt8(ascii: "["))
        for (position, changeSet) in changeSets.enumerated() {
            if position > 0 { writer.byte(UInt8(ascii: ",")) }
            writeChangeSet(changeSet, to: &writer)
        }
        writer.byte(UInt8(ascii: "]"))
    }

    private func writeChangeSet(_ changeSet: ChangeSet, to writer: inout _Writer) {
        if hasRetiredEntities {
            // Retired entities never travel in this version: their changes are left out.
            var live = changeSet
            live.entities.removeAll { entityIndex[$0.entity].map { tables[$0].retired } ?? false }
            live.refused.removeAll { entityIndex[$0.entity].map { tables[$0].retired } ?? false }
            if live.entities.count != changeSet.entities.count || live.refused.count != changeSet.refused.count {
                return writeLiveChangeSet(live, to: &writer)
            }
        }
        writeLiveChangeSet(changeSet, to: &writer)
    }

    private func writeLiveChangeSet(_ changeSet: ChangeSet, to writer: inout _Writer) {
        writer.byte(UInt8(ascii: "{"))
        if let conflict = changeSet.conflict {
            writer.raw(conflict ? "\"conflict\":true," : "\"conflict\":false,")
        }
        if !changeSet.refused.isEmpty {
            writer.raw("\"__refused__\":[")
            for (position, refused) in changeSet.refused.enumerated() {
                if position > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.raw("{\"type\":")
                writer.string(refused.entity)
                writer.raw(",\"id\":")
                writer.integer(refused.id)
                writer.raw(",\"code\":")
                writer.string(refused.code)
                writer.raw(",\"message\":")
                writer.string(refused.message)
                writer.byte(UInt8(ascii: "}"))
            }
            writer.raw("],")
        }
        writer.raw("\"types\":[")
        for (position, changes) in changeSet.entities.enumerated() {
            if position > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.string(changes.entity)
        }
        writer.byte(UInt8(ascii: "]"))
        for changes in changeSet.entities {
            guard let index = entityIndex[changes.entity] else {
                preconditionFailure("entity '\(changes.entity)' is not in the codec's schema")
            }
            writer.byte(UInt8(ascii: ","))
            writer.string(changes.entity)
            writer.byte(UInt8(ascii: ":"))
            writeEntity(changes, table: tables[index], to: &writer)
        }
        writer.byte(UInt8(ascii: "}"))
    }

    private func writeEntity(_ changes: EntityChanges, table: _EntityTable, to writer: inout _Writer) {
        writer.raw("{\"create\":")
        writeIDs(changes.create, to: &writer)
        writer.raw(",\"update\":")
        writeIDs(changes.update, to: &writer)
        writer.raw(",\"delete\":")
        writeIDs(changes.delete, to: &writer)
        if !changes.recreate.isEmpty {
            writer.raw(",\"recreate\":")
            writeIDs(changes.recreate, to: &writer)
        }
        if !changes.leave.isEmpty {
            writer.raw(",\"leave\":")
            writeIDs(changes.leave, to: &writer)
        }
        writer.raw(",\"attributes\":{")
        for (position, record) in changes.records.enumerated() {
            if position > 0 { writer.byte(UInt8(ascii: ",")) }
            writeRecord(record, table: table, to: &writer)
        }
        writer.raw("}}")
    }

    private func writeIDs(_ ids: [Int64], to writer: inout _Writer) {
        writer.byte(UInt8(ascii: "["))
        for (position, id) in ids.enumerated() {
            if position > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.integer(id)
        }
        writer.byte(UInt8(ascii: "]"))
    }

    /// `"id":{"__oldId__":…,"revision":…,<fields in schema order>,"__stamps__":{…}}`
    private func writeRecord(_ record: WireRecord, table: _EntityTable, to writer: inout _Writer) {
        let fieldCount = table.fieldCount
        precondition(
            record.values.count == fieldCount,
            "record \(record.id) of '\(table.name)' has \(record.values.count) values for \(fieldCount) fields")
        precondition(
            record.present.bits & ~FieldMask.all(count: fieldCount).bits == 0,
            "record \(record.id) of '\(table.name)' marks fields beyond the entity's \(fieldCount) as present")
        writer.reserve(24)
        writer.reservedByte(UInt8(ascii: "\""))
        writer.integer(record.id)
        writer.raw("\":{")
        var first = true
        if let oldID = record.oldID {
            writer.raw("\"__oldId__\":")
            writer.integer(oldID)
            first = false
        }
        if let revision = record.revision {
            writer.raw(first ? "\"revision\":" : ",\"revision\":")
            writer.integer(revision)
            first = false
        }
        let keys = table.keys
        let present = table.hasRetired ? FieldMask(bits: record.present.bits & table.synced.bits) : record.present
        record.values.withUnsafeBufferPointer { values in
            for index in present {
                if !first { writer.byte(UInt8(ascii: ",")) }
                first = false
                writer.bytes(keys.start(index), count: keys.length(index))
                writeValue(values[index], kind: table.kinds[index], field: index, table: table, to: &writer)
            }
        }
        if let stamps = record.stamps {
            precondition(
                stamps.count == fieldCount,
                "record \(record.id) of '\(table.name)' has \(stamps.count) stamps for \(fieldCount) fields")
            writer.raw(first ? "\"__stamps__\":{" : ",\"__stamps__\":{")
            var firstStamp = true
            // The stamp most fields share goes once, under "*", and only the others by name.
            // (Retired fields' stamps never travel: "*" stands for the fields that do.)
            let shared = table.hasRetired ? Self.sharedStamp(ContiguousArray(table.synced.map { stamps[$0] })) : Self.sharedStamp(stamps)
            if let shared {
                writer.raw("\"*\":")
                writeStamp(shared, to: &writer)
                firstStamp = false
            }
            for index in 0..<fieldCount where !stamps[index].isNone && stamps[index] != shared && table.synced.contains(index) {
                if !firstStamp { writer.byte(UInt8(ascii: ",")) }
                firstStamp = false
                writer.bytes(keys.start(index), count: keys.length(index))
                writeStamp(stamps[index], to: &writer)
            }
            writer.byte(UInt8(ascii: "}"))
        }
        writer.byte(UInt8(ascii: "}"))
    }

    /// The stamp that at least two fields and more than any other stamp carry, when no field
    /// lacks one (`"*"` stands for every field not named, so it cannot leave one out).
    @inline(__always)
    static func sharedStamp(_ stamps: ContiguousArray<Stamp>) -> Stamp? {
        let count = stamps.count
        guard count >= 2 else { return nil }
        var best = Stamp.none, bestCount = 1
        for i in 0..<count {
            let candidate = stamps[i]
            if candidate.isNone { return nil }
            guard bestCount <= (count - i) / 2 || i == 0 else { continue }
            var occurrences = 1
            for j in (i + 1)..<count where stamps[j] == candidate { occurrences += 1 }
            if occurrences > bestCount { (best, bestCount) = (candidate, occurrences) }
        }
        return bestCount >= 2 ? best : nil
    }

    /// `[clock,replica]`; a part of 2^63 or more is written as a string of digits.
    @inline(__always)
    private func writeStamp(_ stamp: Stamp, to writer: inout _Writer) {
        writer.reserve(48)
        writer.reservedByte(UInt8(ascii: "["))
        writeStampPart(stamp.clock, to: &writer)
        writer.reservedByte(UInt8(ascii: ","))
        writeStampPart(stamp.replica.rawValue, to: &writer)
        writer.reservedByte(UInt8(ascii: "]"))
    }

    @inline(__always)
    private func writeStampPart(_ value: UInt64, to writer: inout _Writer) {
        if value <= UInt64(Int64.max) {
            writer.reservedUnsigned(value)
        } else {
            writer.reservedByte(UInt8(ascii: "\""))
            writer.reservedUnsigned(value)
            writer.reservedByte(UInt8(ascii: "\""))
        }
    }

    @inline(__always)
    private func writeValue(
        _ value: Value, kind: _EntityTable.Kind, field: Int, table: _EntityTable, to writer: inout _Writer
    ) {
        switch (kind, value) {
        case (_, .null): writer.raw("null")
        case (.integer, .integer(let v)): writer.integer(v)
        case (.real, .real(let v)): writer.real(v)
        case (.text, .text(let v)): writer.string(v)
        case (.bool, .bool(let v)): if v { writer.raw("true") } else { writer.raw("false") }
        case (.date, .date(let v)): _WireDate.write(v, to: &writer)
        case (.blob, .blob(let v)): writer.base64(v)
        case (.textSet, .textSet(let v)):
            writer.byte(UInt8(ascii: "["))
            for (position, member) in v.elements.enumerated() {
                if position > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.string(member)
            }
            writer.byte(UInt8(ascii: "]"))
        default:
            preconditionFailure(
                "field '\(String(decoding: table.fieldNames[field], as: UTF8.self))' of '\(table.name)' "
                    + "holds \(value.kind.rawValue), not \(kind)")
        }
    }
}
