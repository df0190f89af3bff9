import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeWorkload
import Foundation

extension Simulation {
    /// Seeds the server (through the wire, as any client would), lets a seeding device
    /// download everything, and exports its snapshot, from which every device starts.
    func seed() async throws {
        if let remote {
            endpoint = ServerEndpoint(remote: remote, schema: schema)
        } else {
            let open = serverOpener(schema)
            endpoint = ServerEndpoint(server: try open(), reopen: open)
        }
        let codec = WireCodec(schema: schema)
        var revision: Int64 = 0
        let requests = seedData.requests()
        for (index, var request) in requests.enumerated() {
            request.maxRevision = revision
            let answer = try await endpoint.send(Gzip.compress(codec.encode(request)), gzip: true)
            // Gzip'd, or already inflated by an HTTP stack (URLSession undoes Content-Encoding).
            let json = try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes)
            let response = try codec.decodeResponse(json)
            try SeedData.checkNumbering(response)
            revision = response.maxRevision
            progress?("seed", index + 1, requests.count)
        }
        report.seededRecords = seedData.total
        // The seeding device: what a device that downloads everything pays.
        let store = try Store(.file(path: path("seed.sqlite")), schema: schema, replica: ReplicaID(0x5EED_0001), wall: serverWall)
        let client = SyncClient(store: store, transport: endpoint)
        let before = await endpoint.metrics
        let start = ContinuousClock.now
        let summary = try await client.sync()
        report.seedDownload = BootstrapCost(
            seconds: seconds(since: start), requests: summary.rounds, bytesOnWire: (await endpoint.metrics - before).gzipBytesDown,
            recordsReceived: summary.received)
        let snapshot = path("seed.snapshot")
        try await client.withStore { store in
            try store.exportSnapshot(to: snapshot)
            store.database.close()
        }
    }

    /// Opens the in-process server's file with `schema`.
    func serverOpener(_ schema: Schema) -> @Sendable () throws -> RevisionServer {
        let (file, wall, mode, refusals) = (path("server.sqlite"), serverWall, options.mode, options.refusals)
        return {
            var serverOptions = RevisionServer.Options()
            serverOptions.mode = mode
            if refusals { serverOptions.authorize = RefusalRule.authorize }
            return try RevisionServer(.file(path: file), schema: schema, options: serverOptions, wall: wall)
        }
    }

    /// The server and the devices with an even index move to ``LeagueSchema/upgraded``:
    /// each file migrates as it opens, unsent changes and captured plain-SQL writes in it.
    /// The others stay on version 1, answered in their own schema, until ``upgradeRest()``.
    func upgrade() async throws {
        let next = LeagueSchema.upgraded
        report.upgradeChanges = try await endpoint.upgrade(serverOpener(next)).map(\.description)
        schema = next
        oracle.adopt(next)
        for device in devices where device.index % 2 == 0 { try await upgrade(device) }
    }

    /// The devices still on version 1 move to version 2 (the rounds they stayed behind:
    /// ``SimulationReport/roundsBehind``).
    func upgradeRest() async throws {
        for device in devices where device.schema.version < LeagueSchema.upgraded.version { try await upgrade(device) }
    }

    private func upgrade(_ device: Device) async throws {
        if !(try await device.reopen(schema: LeagueSchema.upgraded)).isEmpty { report.upgradedDevices += 1 }
        generators[device.index].adopt(LeagueSchema.upgraded)
    }

    /// Every device is a copy of the seed snapshot opened as a new replica.
    func makeDevices() async throws {
        for index in 0..<options.devices {
            let file = path("device-\(index).sqlite")
            try FileManager.default.copyItem(atPath: path("seed.snapshot"), toPath: file)
            let skew = Device.skew(&random, rate: options.faults.skew, ledger: ledger)
            let wall = ManualWallClock(milliseconds: UInt64(Int64(now) + skew))
            let store = try Store.openSnapshot(at: file, schema: schema, replica: ReplicaID(Device.firstReplica + UInt64(index)), wall: wall)
            let transport = FaultyTransport(endpoint, rates: options.faults, seed: options.seed &+ UInt64(index) &* 0x9E37_79B9, ledger: ledger)
            devices.append(await Device(index: index, path: file, store: store, wall: wall, skew: skew, transport: transport, ledger: ledger))
            generators.append(EditGenerator(
                schema: schema, device: index, exempt: skew > 60_000, cascades: options.cascadingDeletes, seedData: seedData,
                seed: options.seed ^ (UInt64(index + 1) << 32),
                plainSQLPath: options.plainSQLEvery > 0 && index % options.plainSQLEvery == options.plainSQLEvery - 1 ? file : nil))
            progress?("devices", index + 1, options.devices)
        }
    }

    /// One round: some devices go offline and edit, then devices sync in a random order.
    func runRound(_ round: Int) async throws {
        now += 10_000
        serverWall.set(milliseconds: now)
        if options.upgrade, await endpoint.isLocal {
            if round == upgradeRound { try await upgrade() }
            if round == upgradeRound + SimulationReport.roundsBehind { try await upgradeRest() }
        }
        var restarted = false
        if options.faults.restart, round == options.rounds / 2, await endpoint.isLocal {
            try await endpoint.restart()
            ledger.injected(.serverRestart)
            restarted = true
        }
        for device in devices where chance(options.editingShare) {
            device.tick(now)
            try await edit(device, count: options.editsPerDevice)
        }
        if options.sleeper, round == options.rounds / 2, await endpoint.isLocal {
            // Everything deleted so far: the sleeper (and any device behind) must rebase.
            report.compaction = try await endpoint.withServer { try await $0.compact(through: .max, batch: 1_000) }
        }
        if options.live {
            // No explicit sync: the edits go out and others' changes come in by live mode
            // (a restart is survived when the devices converge, ``convergeLive()``).
            try await Task.sleep(for: options.liveRoundPause)
        } else {
            var order = Array(devices.indices)
            for i in order.indices.reversed() where i > 0 { order.swapAt(i, random.below(i + 1)) }
            for index in order where chance(options.syncingShare) {
                if options.sleeper && index == 0 && round > 0 && round < options.rounds - 1 { continue }  // asleep
                try await syncOne(devices[index])
            }
            if restarted { ledger.survived(.serverRestart) }
        }
        progress?("rounds", round + 1, options.rounds)
    }

    /// `count` edits on `device` by its generator, recorded for the oracle.
    func edit(_ device: Device, count: Int) async throws {
        let (next, edits) = try await device.edit(with: generators[device.index]) { try $0.edit($1, count: count) }
        generators[device.index] = next
        oracle.record(edits)
    }

    /// The round at whose start the server and half the devices upgrade.
    var upgradeRound: Int { max(1, options.rounds / 3) }

    /// Syncs one device (retrying through faults), possibly arming a crash first.
    @discardableResult
    func syncOne(_ device: Device) async throws -> SyncSummary {
        now += 7
        serverWall.set(milliseconds: now)
        device.tick(now)
        if chance(options.faults.crash) { device.crashSwitch.arm(ApplyStage.allCases[random.below(ApplyStage.allCases.count)]) }
        // After a failed attempt (a lost answer, a crash) the user sometimes edits before
        // the retry: the request in flight must still be answered once.
        let summary = try await device.sync(ledger: ledger) { [self] in
            if chance(0.5) {
                device.tick(now)
                try await edit(device, count: 2)
            }
        }
        if device.schema.version < schema.version { report.syncsBehind += 1 }
        if let rebase = summary.rebase {
            if rebase.began { report.rebases += 1 }
            if device.index == 0 && options.sleeper {
                var total = SyncSummary(), this = SyncSummary()
                (total.rebase, this.rebase) = (report.sleeperRebase, rebase)
                total.merge(this)
                report.sleeperRebase = total.rebase
            }
        }
        return summary
    }

    /// Syncs every device until a whole pass sends nothing and the server's revision did not
    /// move during it: then all hold the same revision. (A device's change can reach the
    /// server in a pass without being counted as sent by it: a request of live mode's last
    /// sync, cut short when live mode stopped, that the server took after the devices before
    /// it in the pass had synced.)
    func settle() async throws {
        if options.upgrade, await endpoint.isLocal { try await upgradeRest() }  // a run too short to reach it
        var passes: [String] = []
        for pass in 0..<20 {
            let before = await endpoint.withServer { await $0.maxRevision }
            var sent = 0
            for device in devices { sent += try await syncOne(device).sent }
            progress?("settle", pass + 1, pass + 2)
            let after = await endpoint.withServer { await $0.maxRevision }
            passes.append("\(sent) sent, revision \(before.map(String.init) ?? "?") to \(after.map(String.init) ?? "?")")
            if sent == 0 && before == after { break }
        }
        let unsettledBefore = report.unsettled.count
        defer {
            // What each pass did, to tell why devices were left behind.
            if report.unsettled.count > unsettledBefore { report.unsettled.append("settle passes: " + passes.joined(separator: "; ")) }
        }
        let serverRevision = await endpoint.withServer { await $0.maxRevision }
        var revisions: Set<Int64> = []
        for device in devices {
            let state = try await device.state()
            revisions.insert(state.maxRevision)
            if state.pending > 0 { report.unsettled.append("device \(device.index): \(state.pending) changes still pending") }
            if let serverRevision, state.maxRevision != serverRevision {
                report.unsettled.append("device \(device.index) holds revision \(state.maxRevision), the server \(serverRevision)")
            }
        }
        if serverRevision == nil, revisions.count > 1 { report.unsettled.append("devices hold different revisions: \(revisions.sorted())") }
    }
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
