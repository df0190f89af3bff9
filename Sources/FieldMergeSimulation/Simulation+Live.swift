import FieldMergeProtocol
import FieldMergeSync

extension Simulation {
    /// How the devices' live mode runs in a simulation: the library's defaults scaled to a
    /// simulation's pace (writes go out after 20 ms; a failed channel or sync is tried again
    /// after 20 ms doubling to 1 s).
    static var liveOptions: LiveOptions {
        var options = LiveOptions()
        (options.debounce, options.initialBackoff, options.maxBackoff) = (.milliseconds(20), .milliseconds(20), .seconds(1))
        return options
    }

    /// Every device opens its live channel: to the server in this process (surviving its
    /// restarts), or to the remote server's processes in turn; with `disconnect` faults,
    /// through a channel that refuses and drops connections.
    func startLive() async {
        for device in devices {
            let clientID = String(Device.firstReplica + UInt64(device.index), radix: 16)
            var channel = remoteLive.isEmpty ? endpoint.liveChannel(clientID: clientID) : remoteLive[device.index % remoteLive.count]
            if options.faults.dropConnection > 0 {
                let seed = options.seed &+ UInt64(device.index) &* 0xC2B2_AE3D_27D4_EB4F
                channel = FaultyLiveChannel(channel, rate: options.faults.dropConnection, seed: seed, ledger: ledger)
            }
            await device.startLive(over: channel, options: Self.liveOptions, tally: liveTally)
        }
    }

    /// Waits, without an explicit sync, until every device holds the server's revision (with
    /// a remote server: the same revision) with nothing pending, then stops live mode. A run
    /// that does not get there within ``SimulationOptions/liveDeadline`` is unsettled.
    func convergeLive() async throws {
        let start = ContinuousClock.now
        var waiting: [String] = []
        var converged = false
        while !converged {
            waiting = []
            let serverRevision = await endpoint.withServer { await $0.maxRevision }
            var revisions: Set<Int64> = []
            for device in devices {
                let state = try await device.state()
                revisions.insert(state.maxRevision)
                if state.pending > 0 {
                    waiting.append("device \(device.index) has \(state.pending) changes pending")
                } else if let serverRevision, state.maxRevision != serverRevision {
                    waiting.append("device \(device.index) holds revision \(state.maxRevision), the server \(serverRevision)")
                }
            }
            if serverRevision == nil, revisions.count > 1 { waiting.append("devices hold different revisions: \(revisions.sorted())") }
            converged = waiting.isEmpty
            if !converged {
                guard ContinuousClock.now - start < options.liveDeadline else { break }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let elapsed = seconds(since: start)
        for device in devices { await device.stopLive() }
        var counts = liveTally.snapshot
        if converged {
            counts.convergedAfter = elapsed
            // Every device came through the restart and the dropped connections.
            let faults = ledger.counts
            for kind in [FaultKind.serverRestart, .droppedConnection] {
                let open = (faults.injected[kind] ?? 0) - (faults.survived[kind] ?? 0)
                if open > 0 { ledger.survived(kind, open) }
            }
        } else {
            report.unsettled += waiting.map { "live mode, after \(Int(elapsed)) s: \($0)" }
        }
        report.live = counts
    }
}
