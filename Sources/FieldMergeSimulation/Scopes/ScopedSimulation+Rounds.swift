import FieldMerge
import FieldMergeSQLite
import FieldMergeSync

extension ScopedSimulation {
    /// The user whose role `admin` is granted a third of the way and revoked two thirds of
    /// the way (runs of at least 3 rounds).
    var roleHolder: String { users[1] }
    var grantRound: Int { max(1, options.rounds / 3) }
    var revokeRound: Int { max(grantRound + 1, 2 * options.rounds / 3) }

    /// One round: roles change at their rounds, the admin governs, devices edit offline and
    /// some try a write outside their scope, then devices sync in a random order.
    func runRound(_ round: Int) async throws {
        now += 10_000
        serverWall.set(milliseconds: now)
        var restarted = false
        // Servers in other processes cannot be restarted from here (Specs/simulation.md).
        if options.faults.restart, round == options.rounds / 2, !endpoints.isEmpty {
            for endpoint in endpoints { try await endpoint.restart() }
            ledger.injected(.serverRestart)
            restarted = true
        }
        if options.rounds >= 3, round == grantRound || round == revokeRound {
            directory.setRoles(round == grantRound ? [TeamSchema.adminRole] : [], of: roleHolder)
            report.roleChanges += 1
        }
        if round >= 1, stuck[0] == nil {
            devices[0].tick(now)
            let users = self.users
            let (editor, governed) = try await devices[0].edit(with: editors[0]) { try $0.govern($1, users: users) }
            editors[0] = editor
            log.merge(governed)
        }
        for device in devices where stuck[device.index] == nil && chance(options.editingShare) {
            device.tick(now)
            try await edit(device, count: options.editsPerDevice)
        }
        for device in devices where !isAdmin(device) && chance(options.probingShare) { try await probe(device) }
        var order = Array(devices.indices)
        for i in order.indices.reversed() where i > 0 { order.swapAt(i, random.below(i + 1)) }
        for index in order where chance(options.syncingShare) { try await syncOne(devices[index]) }
        if restarted { ledger.survived(.serverRestart) }
        progress?("rounds", round + 1, options.rounds)
    }

    func user(of device: Device) -> String { users[device.index % users.count] }

    func isAdmin(_ device: Device) -> Bool { directory.roles(of: user(of: device)).contains(TeamSchema.adminRole) }

    /// `count` edits on `device`, logged for the oracle.
    func edit(_ device: Device, count: Int) async throws {
        let (next, edits) = try await device.edit(with: editors[device.index]) { try $0.edit($1, count: count) }
        editors[device.index] = next
        log.merge(edits)
    }

    /// Syncs one device through faults (a crash armed sometimes; edits between attempts).
    func syncOne(_ device: Device) async throws {
        if chance(options.faults.crash) { device.crashSwitch.arm(ApplyStage.allCases[random.below(ApplyStage.allCases.count)])}
        _ = try await sync(device) { [self] in
            if chance(0.5) {
                device.tick(now)
                try await edit(device, count: 2)
            }
        }
    }

    /// Syncs `device` unless it is stuck; a device that cannot complete a sync is noted as
    /// stuck and left out from then on. - Returns: What it sent.
    @discardableResult
    func sync(_ device: Device, afterFailure: () async throws -> Void = {}) async throws -> Int {
        guard stuck[device.index] == nil else { return 0 }
        now += 7
        serverWall.set(milliseconds: now)
        device.tick(now)
        do {
            return try await device.sync(ledger: ledger, afterFailure: afterFailure).sent
        } catch let error as SimulationError {
            stuck[device.index] = "\(error)"
            report.unsettled.append("device \(device.index) (\(user(of: device))) is stuck: \(error)")
            return 0
        }
    }

    /// Syncs every device until a whole pass sends nothing; then each must hold the server's
    /// revision with nothing pending.
    func settle() async throws {
        for pass in 0..<20 {
            var sent = 0
            for device in devices { sent += try await sync(device) }
            progress?("settle", pass + 1, pass + 2)
            if sent == 0 { break }
        }
        let revision = try await serverState().maxRevision
        for device in devices where stuck[device.index] == nil {
            let state = try await device.state()
            if state.pending > 0 { report.unsettled.append("device \(device.index): \(state.pending) changes still pending") }
            if state.maxRevision != revision {
                report.unsettled.append("device \(device.index) holds revision \(state.maxRevision), the server \(revision)")
            }
        }
    }
}
