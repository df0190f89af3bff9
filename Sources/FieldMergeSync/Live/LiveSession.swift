import FieldMerge
import FieldMergeProtocol
import Synchronization

/// One run of live mode: the task that reads the channel, the task that syncs when told,
/// and the outcomes they report (``SyncClient/startLive(over:options:)``).
final class LiveSession: Sendable {
    let outcomes: AsyncStream<LiveOutcome>
    private let report: AsyncStream<LiveOutcome>.Continuation
    /// Wake-ups of the syncer: at most one waits (the buffer keeps the newest one).
    private let wakes: AsyncStream<Void>.Continuation
    private let debouncing = Mutex(false)
    private let options: LiveOptions
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// The channel open now, and how often the device's subscriptions changed: a channel
    /// opened before the last change is closed and opened again (``resubscribe()``).
    private let channel = Channel()

    final class Channel: Sendable {
        let changes = Atomic(0)
        let current = Mutex<Task<(received: Bool, failure: String?), Never>?>(nil)
    }

    init(client: SyncClient, channel: any LiveChannel, options: LiveOptions) {
        self.options = options
        (outcomes, report) = AsyncStream.makeStream(of: LiveOutcome.self, bufferingPolicy: .bufferingNewest(64))
        let (wakeups, wakes) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wakes = wakes
        let report = report
        let syncer = Task { [wakes] in
            // A sync that failed is tried again after a backoff (as a failed channel is), so
            // that a write made just before a network blip does not wait for the next event
            // or write; a newer wake-up joins the retry.
            var failures = 0
            for await _ in wakeups {
                do throws(SyncError) {
                    let summary = try await client.sync()
                    failures = 0
                    report.yield(.synced(summary, revision: await client.liveCursor))
                } catch {
                    if Task.isCancelled { break }
                    report.yield(.syncFailed(error))
                    failures += 1
                    // One refused for good (a schema the server does not know yet, a body it
                    // could not read) is tried again too, but only after the longest wait.
                    let unit = Double.random(in: 0...1)
                    let delay = error.isRetryable ? options.backoff(after: failures, unit: unit) : options.maxBackoff * (0.5 + 0.5 * unit)
                    Task {
                        try await Task.sleep(for: delay)
                        wakes.yield()
                    }
                }
            }
        }
        let open = self.channel
        let reader = Task { [wakes] in
            await Self.read(channel, client: client, options: options, report: report, open: open, wake: { wakes.yield() })
        }
        tasks.withLock { $0 = [reader, syncer] }
    }

    /// A local write happened: sync after the debounce (one sync for every write in it).
    func localWrite() {
        let start = debouncing.withLock { busy -> Bool in
            defer { busy = true }
            return !busy
        }
        guard start else { return }
        let delay = options.debounce
        Task { [self] in
            try? await Task.sleep(for: delay)
            debouncing.withLock { $0 = false }
            wakes.yield()
        }
    }

    /// The device's subscriptions changed: the channel is opened again with them, at once,
    /// and a sync asks for them.
    func resubscribe() {
        channel.changes.add(1, ordering: .sequentiallyConsistent)
        channel.current.withLock { $0 }?.cancel()
        localWrite()
    }

    func stop() {
        wakes.finish()
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    /// Returns when both tasks have ended; the outcomes then finish.
    func finished() async {
        for task in tasks.withLock({ $0 }) { await task.value }
        report.finish()
    }

    /// Reads the channel until cancelled: each event handled by the client, the channel
    /// opened again at once when the server ended it and after a backoff when it failed.
    private static func read(
        _ primary: any LiveChannel, client: SyncClient, options: LiveOptions,
        report: AsyncStream<LiveOutcome>.Continuation, open: Channel, wake: @escaping @Sendable () -> Void
    ) async {
        var failures = 0
        var usesFallback = false
        while !Task.isCancelled {
            let channel = usesFallback ? options.fallback ?? primary : primary
            let generation = open.changes.load(ordering: .sequentiallyConsistent)
            let iteration = Task { await client.follow(channel, report: report, wake: wake) }
            open.current.withLock { $0 = iteration }
            // Subscriptions that changed while it opened: open it again with them.
            if open.changes.load(ordering: .sequentiallyConsistent) != generation { iteration.cancel() }
            let (received, failure) = await withTaskCancellationHandler { await iteration.value } onCancel: { iteration.cancel() }
            if received { failures = 0 }
            if Task.isCancelled { break }
            if open.changes.load(ordering: .sequentiallyConsistent) != generation {
                report.yield(.disconnected(error: nil, retryIn: .zero))
                continue
            }
            // A channel that ends without a single event counts as failing (no hot loop).
            guard failure != nil || !received else {
                report.yield(.disconnected(error: nil, retryIn: .zero))
                continue
            }
            failures += 1
            if !usesFallback, options.fallback != nil, failures >= options.fallbackAfter {
                usesFallback = true
                failures = 0
            }
            let delay = options.backoff(after: max(failures, 1), unit: Double.random(in: 0...1))
            report.yield(.disconnected(error: failure ?? "the channel ended before its first event", retryIn: delay))
            do { try await Task.sleep(for: delay) } catch { break }
        }
    }
}
