import FieldMerge
import FieldMergeSQLite

extension Check {
    /// Checks every non-reference field of a living record that was created or edited.
    mutating func checkFields(_ key: Key, _ store: Store) throws {
        let entity = schema.entities[key.entity]
        guard let start = initial(key), let final = try store.record(entity.name, id: key.id) else { return }
        let edits = fieldEdits[key] ?? []
        let name = "\(entity.name) \(key.id)"
        for (field, role) in roles[key.entity].enumerated() {
            let writes = edits.filter { $0.field == field }
            let added = field >= start.added  // added by a later schema version: default, Stamp.schemaDefault
            guard creations[key] != nil || !writes.isEmpty || added else { continue }
            result.fields += 1
            let value = final.values[field], label = "\(name).\(entity.fields[field].name)"
            let initialValue = start.values[field]
            switch role {
            case .reference:
                continue
            case .counter:
                var expected: Int64 = if case .integer(let v) = initialValue { v } else { 0 }
                for write in writes { if case .increment(let step) = write.kind { expected &+= step } }
                if value != .integer(expected) {
                    result.fail("\(label) is \(value), expected \(expected) (counter: \(initialValue) plus \(writes.count) increments)")
                }
            case .union:
                let initialMembers: [String] = if case .textSet(let set) = initialValue { set.elements } else { [] }
                var members = Set(initialMembers)
                for write in writes { if case .add(let member) = write.kind { members.insert(member) } }
                let expected = Value.textSet(TextSet(members))
                if value != expected { result.fail("\(label) is \(value), expected \(expected) (union of \(writes.count) additions)") }
            case .max:
                var expected = initialValue
                for write in writes where Value.precedes(expected, write.value) { expected = write.value }
                if value != expected { result.fail("\(label) is \(value), expected \(expected) (max of \(writes.count) writes)") }
            case .lastEditWins:
                let candidates = [Write(stamp: added ? .schemaDefault : start.stamp, value: initialValue, exempt: start.exempt, base: .none)]
                    + writes.map { Write(stamp: $0.stamp, value: $0.value, exempt: $0.exempt, base: $0.base) }
                checkNewestWins(label, value: value, stamp: final.stamps[field], writes: candidates)
            }
        }
    }

    /// `lastEditWins`: the final value is the value of the write whose stamp the field holds (a
    /// clamped write counts with the stamp the server gave it), and every other write gave way
    /// to it: it is older than, or was seen and overwritten by, a write that gave way to it in
    /// turn. (A device whose clock runs behind stamps a later edit older; the three-way merge
    /// rightly keeps it, since only that side changed the field.)
    mutating func checkNewestWins(_ label: String, value: Value, stamp: Stamp, writes: [Write]) {
        let final = writes.firstIndex { $0.stamp == stamp }
            ?? writes.firstIndex { $0.exempt && $0.stamp.replica == stamp.replica && $0.stamp.clock >= stamp.clock && $0.value == value }
        guard let final else { return result.fail("\(label) is \(value) stamped \(stamp), which no write made") }
        if writes[final].value != value { return result.fail("\(label) is \(value), but its stamp \(stamp) wrote \(writes[final].value)") }
        var gaveWay = Set([final])
        var grew = true
        while grew {
            grew = false
            for (index, write) in writes.enumerated() where !gaveWay.contains(index) {
                if gaveWay.contains(where: { writes[$0].stamp > write.stamp || write.isSeen(as: writes[$0].base) }) {
                    gaveWay.insert(index)
                    grew = true
                }
            }
        }
        for (index, write) in writes.enumerated() where !write.exempt && !gaveWay.contains(index) {
            result.fail("\(label): the write stamped \(write.stamp) was lost to \(stamp); writes: "
                + writes.map { "\($0.value) at \($0.stamp) on \($0.base)" }.joined(separator: ", "))
            return
        }
    }

    /// One write of a `lastEditWins` field: its stamp, value, the stamp it replaced.
    struct Write {
        var stamp: Stamp, value: Value, exempt: Bool, base: Stamp

        /// Whether a device that saw `seen` saw this write (as the server clamped it, if exempt).
        func isSeen(as seen: Stamp) -> Bool {
            seen == stamp || exempt && seen.replica == stamp.replica && seen.clock <= stamp.clock
        }
    }
}
