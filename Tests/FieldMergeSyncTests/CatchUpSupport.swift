import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import Synchronization
import Testing

/// A commit clock that moves only when told; a sleep returns once the clock reaches its
/// deadline (or throws when its task is cancelled).
final class ManualCommitClock: CommitClock, Sendable {
    private struct State {
        var now: Duration = .zero
        var next = 0
        var sleepers: [Int: (deadline: Duration, wake: CheckedContinuation<Void, Never>)] = [:]
        var cancelled: Set<Int> = []
    }
    private let state = Mutex(State())

    var now: Duration { state.withLock { $0.now } }

    /// Moves the clock forward by `step` and wakes the sleepers whose deadline it reached.
    func advance(by step: Duration) {
        let woken = state.withLock { state in
            state.now += step
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.wake)
        }
        for wake in woken { wake.resume() }
    }

    func sleep(until deadline: Duration) async throws {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (wake: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.now >= deadline || state.cancelled.contains(id) { return true }
                    state.sleepers[id] = (deadline, wake)
                    return false
                }
                if resumeNow { wake.resume() }
            }
        } onCancel: {
            let wake = state.withLock { state in
                state.cancelled.insert(id)
                return state.sleepers.removeValue(forKey: id)?.wake
            }
            wake?.resume()
        }
        try Task.checkCancellation()
    }
}

/// Passes requests to the in-process server, running an action before the answer to the
/// request numbered as its key (1 is the first), or failing that request.
actor StagedTransport: SyncTransport {
    let inner: InProcessTransport
    var calls = 0
    private var before: [Int: @Sendable () async throws -> Void] = [:]
    private var failing: Set<Int> = []

    init(inner: InProcessTransport) { self.inner = inner }

    func before(_ call: Int, _ action: @escaping @Sendable () async throws -> Void) { before[call] = action }
    func fail(_ call: Int) { failing.insert(call) }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        calls += 1
        let call = calls
        if let action = before[call] { try await action() }
        if failing.contains(call) { throw TransportError("request \(call) fails (a test)") }
        return try await inner.send(body, gzip: gzip)
    }
}

/// Counts the `ApplyStage`s a client passes, and may act at one of them.
final class StageCounter: Sendable {
    private let counts = Mutex([ApplyStage: Int]())
    private let action: @Sendable (ApplyStage, Int) throws -> Void

    init(_ action: @escaping @Sendable (ApplyStage, Int) throws -> Void = { _, _ in }) { self.action = action }

    /// The hook for `SyncClient.setApplyHook(_:)`: the stage's count (1 for the first page) goes to the action.
    var hook: @Sendable (ApplyStage) throws -> Void {
        { stage in
            let count = self.counts.withLock { counts in
                counts[stage, default: 0] += 1
                return counts[stage]!
            }
            try self.action(stage, count)
        }
    }
}

/// Collects what a client's observers hear.
final class HeardChanges: Sendable {
    private let heard = Mutex([StoreChange]())
    var changes: [StoreChange] { heard.withLock { $0 } }
    func append(_ change: StoreChange) { heard.withLock { $0.append(change) } }
}

struct CatchUpCrash: Error {}

/// A server holding `count` lists, made in as many revisions, and a fresh reader (client 1)
/// with pages of 10 and no prefetch (each request goes out from the round that uses it).
func catchUpWorld(lists count: Int = 25, file: String? = nil) async throws -> (World, SyncClient, StagedTransport) {
    let world = try World(clients: 1, batchSize: 10)
    let writer = world.clients[0]
    for n in 0..<count {
        _ = try await writer.withStore { try $0.insert("lists", values: [.text("list \(n)")]) }
        _ = try await writer.sync()
    }
    let transport = StagedTransport(inner: world.transport)
    let store = try Store(file.map { .file(path: $0) } ?? .memory, schema: world.schema, replica: ReplicaID(7))
    let reader = SyncClient(store: store, transport: transport, batchSize: 10)
    await reader.setPrefetch(false)
    return (world, reader, transport)
}

extension SyncClient {
    /// Hears every change from now on.
    func listen() -> HeardChanges {
        let heard = HeardChanges()
        addObserver { heard.append($0) }
        return heard
    }
}
