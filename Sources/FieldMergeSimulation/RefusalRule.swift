import FieldMergeServer

/// The simulation's authorization rule, which the in-process server applies and the oracle
/// knows: devices 1, 5, 9, … (index % 4 == 1) may not update a venue whose id is a multiple
/// of 3. They may still create and delete venues. The server refuses such an update; the
/// device keeps it aside (parked, with the reason) and syncs everything else; at the end the
/// run checks that every refused update was kept aside, never dropped, and discards them.
public enum RefusalRule {
    static let entity = "venues"

    /// Whether device `device` may not update record `id` of `entity`.
    static func refuses(device: Int, entity: String, id: Int64) -> Bool {
        device % 4 == 1 && entity == Self.entity && id > 0 && id % 3 == 0
    }

    /// The device a sync client id names (devices are replicas 0xD000 + index).
    static func device(ofClient clientID: String) -> Int? {
        guard let replica = UInt64(clientID, radix: 16), replica >= Device.firstReplica, replica < Device.firstReplica + 0x1000 else {
            return nil
        }
        return Int(replica - Device.firstReplica)
    }

    /// The server's hook: refuses what ``refuses(device:entity:id:)`` says, allows the rest.
    @Sendable static func authorize(_ request: RevisionServer.AuthorizationRequest) -> Bool {
        guard request.kind == .update, let user = request.identity?.user, let device = device(ofClient: user) else { return true }
        return !refuses(device: device, entity: request.entity, id: request.id)
    }
}
