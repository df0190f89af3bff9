import FieldMerge
import FieldMergeSQLite

extension Simulation {
    /// After the devices settle: notes what each device kept aside because the server refused
    /// it (the oracle checks it against the rule), then gives those changes up for the
    /// server's version, as an app would once its user saw them, and lets every device sync
    /// once more so all replicas can be compared.
    func collectRefusedChanges() async throws {
        // Settling again may refuse more (a user edits before a failed sync's retry): until
        // a pass finds none.
        for _ in 0..<10 {
            guard try await collectRefusedOnce() > 0 else { return }
            try await settle()
        }
    }

    /// Notes and discards every device's refused changes; how many there were.
    private func collectRefusedOnce() async throws -> Int {
        var keptAside = 0
        for device in devices {
            let entries = try await device.client.withStore { store in
                let refused = try store.unsyncedChanges().filter { $0.refusal != nil }
                for change in refused { try store.discard(change.entity, id: change.id) }
                return refused.map { ($0.entity, $0.id, $0.refusal!.code) }
            }
            for (entity, id, code) in entries {
                parked.insert(Oracle.Parked(device: device.index, entity: entity, id: id))
                // A rebase keeps aside a refused change of a record the server no longer has.
                let expected = code == "unauthorized" || (options.sleeper && code == KeptAside.code)
                if !expected { report.unsettled.append("device \(device.index): \(entity) \(id) refused as \(code)") }
            }
            keptAside += entries.count
        }
        return keptAside
    }
}
