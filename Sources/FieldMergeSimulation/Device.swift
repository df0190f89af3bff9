import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeWorkload

/// One simulated device: its own SQLite file, wall clock (possibly skewed), fault-injecting
/// transport and sync client. A crash closes the store and opens the file again.
final class Device {
    /// Device *i* is replica `firstReplica + i`.
    static let firstReplica: UInt64 = 0xD000
    let index: Int
    let path: String
    private(set) var schema: Schema
    let wall: ManualWallClock
    /// How far this device's wall clock is off, in milliseconds.
    let skew: Int64
    let transport: FaultyTransport
    let crashSwitch: CrashSwitch
    private(set) var client: SyncClient
    /// Completed syncs, and the merged summaries of what they did.
    private(set) var syncs = 0
    private(set) var summary = SyncSummary()
    /// Attempts that failed (transport faults, crashes) and were retried.
    private(set) var failedAttempts = 0
    /// Crashes since the last completed sync: survived when the next one completes.
    private var crashesSinceSync = 0
    /// Live mode: its channel and options, and what counts its outcomes (nil: off).
    private var live: (channel: any LiveChannel, options: LiveOptions, tally: LiveTally)?
    private var counting: [Task<Void, Never>] = []

    init(
        index: Int, path: String, store: sending Store, wall: ManualWallClock, skew: Int64, transport: FaultyTransport,
        ledger: FaultLedger
    ) async {
        self.index = index
        crashSwitch = CrashSwitch(ledger: ledger)
        self.path = path
        schema = store.schema
        self.wall = wall
        self.skew = skew
        self.transport = transport
        client = SyncClient(store: store, transport: transport, batchSize: Simulation.pageSize)
        await client.setApplyHook(crashSwitch.hook)
    }

    /// How far a new device's clock is off, in milliseconds: up to 2 s either way or, with
    /// probability `rate` (a skewed clock, counted in `ledger`), an hour to a year either way.
    static func skew(_ random: inout SplitMix64, rate: Double, ledger: FaultLedger) -> Int64 {
        var skew = Int64(random.below(UInt64(4_001))) - 2_000
        if rate > 0 && Double(random.next() >> 11) / Double(1 << 53) < rate {
            let size = 3_600_000 + Int64(random.below(UInt64(365 * 86_400_000 - 3_600_000)))
            skew = random.below(UInt64(2)) == 0 ? size : -size
            ledger.injected(.skewedClock)
        }
        return skew
    }

    /// Sets the device's wall clock to the simulation's time plus its skew.
    func tick(_ now: UInt64) {
        wall.set(milliseconds: UInt64(max(0, Int64(now) + skew)))
    }

    /// Closes the store as a killed app would leave it, and opens the file again.
    /// With `schema`, a newer version: the store migrates the file as it opens.
    /// - Returns: What the migration changed.
    @discardableResult
    func reopen(schema newSchema: Schema? = nil) async throws -> [SchemaChange] {
        if live != nil { await client.stopLive() }
        await client.withStore { $0.database.close() }
        if let newSchema { schema = newSchema }
        let store = try Store(.file(path: path), schema: schema, wall: wall)
        let migrations = store.migrations
        client = SyncClient(store: store, transport: transport, batchSize: Simulation.pageSize)
        await client.setApplyHook(crashSwitch.hook)
        if let live { counting.append(live.tally.count(await client.startLive(over: live.channel, options: live.options))) }
        return migrations
    }

    /// Starts live mode over `channel` (again after every reopen, until ``stopLive()``).
    func startLive(over channel: any LiveChannel, options: LiveOptions, tally: LiveTally) async {
        live = (channel, options, tally)
        counting.append(tally.count(await client.startLive(over: channel, options: options)))
    }

    /// Stops live mode; returns when its outcomes are counted.
    func stopLive() async {
        live = nil
        await client.stopLive()
        for task in counting { await task.value }
        counting = []
    }

    /// Syncs until a sync completes, retrying after every failure (a lost request or answer,
    /// a corrupted body, a crash, after which the store is reopened).
    /// - Returns: What the completed sync did.
    /// - Parameter afterFailure: Runs after each failed attempt, before the next (edits a
    ///   user makes while the device is offline again).
    func sync(ledger: FaultLedger, attempts: Int = 60, afterFailure: () async throws -> Void = {}) async throws -> SyncSummary {
        var lastError: any Error = SimulationError("no attempt")
        for _ in 0..<attempts {
            do {
                let done = try await client.sync()
                syncs += 1
                summary.merge(done)
                _ = await transport.resolve()
                ledger.survived(.crash, crashesSinceSync)
                crashesSinceSync = 0
                crashSwitch.arm(nil)  // a crash armed for a stage this sync never reached
                _ = crashSwitch.takeFired()
                return done
            } catch {
                failedAttempts += 1
                lastError = error
                summary.merge(error.completed)
                // A crash inside the store's transaction reaches here wrapped in a StoreError.
                let fired = crashSwitch.takeFired()
                if fired || error.cause is SimulatedCrash {
                    crashesSinceSync += 1
                    try await reopen()
                }
                try await afterFailure()
            }
        }
        throw SimulationError("device \(index) did not complete a sync in \(attempts) attempts: \(lastError)")
    }

    /// Runs `body` on the store with a copy of `generator` (a value its edits advance) and
    /// gives back the advanced copy with what `body` returned.
    func edit<Generator: Sendable, Result: Sendable>(
        with generator: Generator, _ body: @escaping @Sendable (inout Generator, Store) throws -> Result
    ) async throws -> (Generator, Result) {
        try await client.withStore { store in
            var generator = generator
            let result = try body(&generator, store)
            return (generator, result)
        }
    }

    /// Whether the device has nothing to send, and the revision it holds.
    func state() async throws -> (pending: Int, maxRevision: Int64) {
        try await client.inspect { store in (try store.pendingChanges().count, store.maxRevision) }
    }

    /// The permanent ids the server gave this device's temporary ids, by entity.
    func idMap() async throws -> [String: [Int64: Int64]] {
        try await client.inspect { store in
            var map: [String: [Int64: Int64]] = [:]
            for row in try store.database.rows("SELECT \"entity\", \"temporary\", \"permanent\" FROM \"__fm_idmap\"") {
                if case .text(let entity) = row[0], case .integer(let temporary) = row[1], case .integer(let permanent) = row[2] {
                    map[entity, default: [:]][temporary] = permanent
                }
            }
            return map
        }
    }
}
