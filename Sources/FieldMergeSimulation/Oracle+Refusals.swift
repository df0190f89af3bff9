import FieldMerge
import FieldMergeSQLite

extension Check {
    /// Every field update the server's rule refused was kept aside on its device, unless the
    /// record is gone, the device deleted it itself, or what converged makes the edit moot (a
    /// newer write of that field, a larger `max`): the device's merge then rightly dropped its
    /// local change. Nothing the rule allows was kept aside.
    mutating func checkRefusals(_ parked: Set<Oracle.Parked>, _ store: Store) throws {
        result.refusedEdits = refused.count
        result.keptAside = parked.count
        for entry in parked {
            if let refuses, refuses(entry.device, entry.entity, entry.id) { continue }
            result.fail("device \(entry.device) kept \(entry.entity) \(entry.id) aside, which the server's rule allows")
        }
        for (edit, key) in refused where present[key.entity].contains(key.id) && deleters[key]?.contains(edit.device) != true {
            let name = schema.entities[key.entity].name
            guard !parked.contains(Oracle.Parked(device: edit.device, entity: name, id: key.id)),
                let final = try store.record(name, id: key.id)
            else { continue }
            let moot = switch edit.kind {
            case .set: final.stamps[edit.field] > edit.stamp
            case .raise: !Value.precedes(final.values[edit.field], edit.value)
            default: false
            }
            if !moot {
                result.fail("device \(edit.device)'s refused \(edit.kind) of \(name) \(key.id).\(schema.entities[key.entity].fields[edit.field].name) was neither kept aside nor applied")
            }
        }
    }
}
