import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// Keeps a `Store` in step with a server that speaks the revision protocol.
///
/// ``sync(maxRounds:progress:)`` runs rounds until nothing is left to send and catch-up has
/// no more pages: pending changes → request → transport → response → three-way merge of
/// every record that has local changes → one store transaction. Catch-up pages share one
/// transaction, committed every 250 ms or 100,000 records and at the end
/// (``CatchUpCommits``). A failed round changes nothing; the next sync starts over from the
/// store, which is the only state.
///
/// **One sync at a time.** Apps start syncs from many places (launch, a timer, a push,
/// pull-to-refresh). A `sync()` called while another runs never starts a second round
/// beside it: it waits for exactly one follow-up sync, which starts when the running one
/// ends and so sends everything made before the call; every further call joins that
/// follow-up.
///
/// **Its own checkpoints.** A file store's write-ahead log is moved into the file after
/// each commit on a connection and thread of the client's own (`Checkpointer`), so that a
/// sync's commit never waits for it.
///
/// **Its own thread.** The client runs on a `DatabaseExecutor` of its own, so applying a
/// response (SQLite work) never occupies Swift concurrency's shared threads.
/// ``write(_:)`` runs local edits there, between rounds; ``read(_:)`` runs reads on a
/// read-only connection that never waits for a sync (file stores).
///
/// **Attachments.** Over an `AttachmentTransport`, each sync first uploads the bytes the
/// store's queue owes the server (`Store.attach`), so that no record reaches the server
/// before its bytes; ``attachment(_:entity:)`` opens one, downloading it on first access
/// (Specs/attachments.md §7).
public actor SyncClient {
    private let executor: DatabaseExecutor
    let store: Store
    let transport: any SyncTransport
    let codec: WireCodec
    public let clientID: String
    /// The store's schema version and fingerprint, sent with every request.
    var schemaVersion: Int { codec.schema.version }
    var schemaFingerprint: String { codec.schemaFingerprint }
    private let reader: StoreReader?
    /// Checkpoints a file store's log after each commit, off the client's thread.
    private let checkpointer: Checkpointer?
    /// Gzip request bodies (and accept gzip'd responses).
    public var gzip: Bool
    /// At most this many records per request; catch-up pages use it as `limit` too.
    public var batchSize: Int
    /// Ask for the next catch-up page while applying the current one (a read-only request
    /// that overlaps the server's and the codec's work with the store's). On by default.
    public var prefetchesPages = true
    /// Records per piece of a prefetched catch-up page, read while it is applied
    /// (``PagePieces``): about what the client holds decoded at a time, three pieces,
    /// instead of a page. Below a few hundred, each piece's own statements start to show.
    var pieceRecords = 2_000
    /// When a catch-up commits the pages it applied (one transaction for several pages).
    public var catchUpCommits: CatchUpCommits
    /// The store's page cache, in KiB, while a sync downloads the data set from revision 0
    /// (a new replica, or a rebase); nil keeps the store's own. 2,048 by default: such a
    /// download appends in the order records were last written, which a small cache serves
    /// as fast as a large one, and a device then holds 2 MiB instead of the store's 32 MiB
    /// (Specs/store.md, "Memory"). The store's own size comes back when the sync ends.
    public var downloadPageCacheKiB: Int?
    /// What the catch-up reads to tell when ``CatchUpCommits/interval`` is over.
    package var commitClock: any CommitClock = ContinuousCommitClock()
    /// The catch-up's transaction while one is open.
    var catchUp: CatchUpWindow?
    var catchUpGeneration = 0
    /// How many catch-up transactions committed (for tests and benches).
    package internal(set) var catchUpCommitCount = 0
    /// Hears how long each phase of a round takes (`SyncPhase`); nil, the default, times nothing.
    public let probe: (any SyncProbe)?
    /// Called at each stage of applying a response; throwing aborts the round there (a
    /// simulated crash). For fault injection in tests and `fieldmerge simulate`.
    var applyHook: (@Sendable (ApplyStage) throws -> Void)?
    /// Who hears of every change (``changes()``, ``addObserver(_:)``), by token.
    var observers: [Int: @Sendable (StoreChange) -> Void] = [:]
    var nextObserver = 0
    /// Live mode, while it runs (``startLive(over:options:)``).
    var live: LiveSession?
    /// The sync running now and the one queued after it.
    private var running: Job?
    private var queued: Job?
    private var jobs = 0
    /// Where the client stands (``state``), and who hears of each change (``states(bufferingPolicy:)``).
    var currentState = SyncState()
    var stateListeners: [Int: AsyncStream<SyncState>.Continuation] = [:]
    var nextStateListener = 0
    /// When attachments of each entity are downloaded (``AttachmentDownloadPolicy``);
    /// `onAccess` for entities not named.
    var downloadPolicies: [String: AttachmentDownloadPolicy] = [:]
    /// How many eager downloads run at once after a sync (``setEagerDownloadConcurrency(_:)``).
    var eagerDownloadConcurrency = 4
    /// How often a sync ends by collecting the attachment cache (``setAttachmentCollection(every:)``).
    var attachmentCollectionMilliseconds: Int64? = 86_400_000
    /// Hears the bytes of attachments moving (``setAttachmentProgress(_:)``).
    var attachmentProgress: (@Sendable (AttachmentProgress) -> Void)?
    /// The downloads under way, by digest: a second opening of the same attachment waits
    /// for the first instead of writing the same file beside it.
    var attachmentDownloads: [String: Task<String, any Error>] = [:]

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A client for `store` over `transport`.
    ///
    /// A file store also gets a read-only connection for ``read(_:)``; when it cannot be
    /// opened, reads run on the store's own connection, between rounds.
    ///
    /// - Parameters:
    ///   - store: The replica; the client owns it from now on.
    ///   - transport: How requests reach the server.
    ///   - gzip: Whether request bodies are gzip'd (and gzip'd responses accepted).
    ///   - batchSize: At most this many records per request; catch-up pages use it as `limit` too.
    ///   - probe: Hears how long each phase of a round takes (`SyncPhase`); nil times nothing.
    ///   - catchUpCommits: When a catch-up commits the pages it applied (by default after
    ///     250 ms or 100,000 records, and at its end).
    ///   - downloadPageCacheKiB: The store's page cache while a sync downloads from revision
    ///     0 (``downloadPageCacheKiB``); nil keeps the store's own.
    ///   - executor: Where the client and its store run; nil, the default, gives it a
    ///     serial queue of its own. Clients that share one run one after another on it
    ///     (many stores in one process, such as a test fleet, without a thread each).
    public init(
        store: sending Store, transport: any SyncTransport, gzip: Bool = true, batchSize: Int = 10_000, probe: (any SyncProbe)? = nil,
        catchUpCommits: CatchUpCommits = CatchUpCommits(), downloadPageCacheKiB: Int? = 2_048, executor: DatabaseExecutor? = nil
    ) {
        self.executor = executor ?? DatabaseExecutor(label: "FieldMerge.SyncClient")
        if case .file(let path) = store.database.location {
            reader = try? StoreReader(path: path, schema: store.schema)
            checkpointer = Checkpointer.takingOver(store.database)
        } else {
            reader = nil
            checkpointer = nil
        }
        self.store = store
        self.transport = transport
        self.gzip = gzip
        self.batchSize = batchSize
        self.probe = probe
        self.catchUpCommits = catchUpCommits
        self.downloadPageCacheKiB = downloadPageCacheKiB
        codec = WireCodec(schema: store.schema)
        clientID = String(store.replica.rawValue, radix: 16)
    }

    /// Installs (or removes, with nil) a hook called at each ``ApplyStage`` of every response;
    /// an error it throws aborts the round at that stage, as a crash there would.
    package func setApplyHook(_ hook: (@Sendable (ApplyStage) throws -> Void)?) { applyHook = hook }

    /// Sets ``pieceRecords`` (tests read pages in small pieces).
    package func setPieceRecords(_ records: Int) {
        precondition(records > 0, "a piece holds at least one record")
        pieceRecords = records
    }

    /// Sets ``downloadPageCacheKiB``.
    public func setDownloadPageCache(_ kib: Int?) { downloadPageCacheKiB = kib }

    /// Sets when a catch-up commits, and the clock it reads (tests inject one).
    package func setCatchUpCommits(_ commits: CatchUpCommits, clock: any CommitClock = ContinuousCommitClock()) {
        catchUpCommits = commits
        commitClock = clock
    }

    /// Runs `body` with the store as one transaction (`Store.transaction(_:)`), on the
    /// client's executor, between sync rounds: never inside one. During a catch-up it
    /// commits the pages applied so far first (``CatchUpCommits``), so it waits for at most
    /// the page being applied, and a later page's failure never undoes it.
    ///
    /// Everything `body` writes commits together: when it throws, nothing of it stays (in
    /// the tables, the outbox or the change log) and the error is rethrown unchanged; a
    /// nested `store.transaction { }` is a savepoint. Observers (``changes()``) hear one
    /// change for the whole block after it commits, and live mode syncs after its debounce.
    ///
    /// - Throws: What `body` throws; `StoreError` when the transaction cannot begin or commit.
    public func write<T: Sendable>(_ body: (Store) throws -> T) throws -> T {
        releaseCatchUp()
        let result = try store.transaction { try body(store) }
        committed()
        refreshUnsynced()
        live?.localWrite()
        return result
    }

    /// Runs `body` with the store on the client's executor, between sync rounds, without a
    /// transaction around it: for reads that must see the client's last writes, or work that
    /// opens its own transactions (each store call that writes is then one of its own).
    public func withStore<T: Sendable>(_ body: (Store) throws -> T) rethrows -> T {
        releaseCatchUp()
        defer {
            committed()
            refreshUnsynced()
            live?.localWrite()
        }
        return try body(store)
    }

    /// Runs `body` with the store, as ``withStore(_:)`` does, but not as a local write: live
    /// mode does not sync for it. For tools and tests that only look.
    package func inspect<T: Sendable>(_ body: (Store) throws -> T) rethrows -> T {
        releaseCatchUp()
        return try body(store)
    }

    /// After a commit: the log goes into the file in the background.
    func committed() { checkpointer?.request() }

    /// Closes the client's connections to its store file: the checkpointer's (after a last
    /// checkpoint), the reader's and the store's own. When this returns nothing of the client
    /// touches the file any more, even a background checkpoint asked for by the last commit;
    /// without it the connections close when the client is released, possibly later than
    /// its last use. A sync, read or write after it fails with a closed-database error.
    public func close() async {
        releaseCatchUp()
        await checkpointer?.close()
        await reader?.close()
        store.close()
    }

    /// Checkpoints a file store's log now and returns when done (benches: so that one
    /// client's background checkpoint does not run in another client's timed sync).
    package func checkpoint() async { await checkpointer?.checkpoint() }

    /// Runs `body` with a read-only view of the store, in one read transaction (every query
    /// in it sees the same committed state), without waiting for a sync in flight.
    ///
    /// File stores read on a connection of their own, concurrently with syncs and writes;
    /// an in-memory store has only its one connection and reads between rounds.
    public func read<T: Sendable>(_ body: @Sendable (Store) throws -> T) async throws -> T {
        if let reader { return try await reader.read(body) }
        releaseCatchUp()
        return try store.database.transaction(.deferred) { try body(store) }
    }

    // MARK: One sync at a time

    private struct Job {
        var id: Int
        var task: Task<Result<SyncSummary, SyncError>, Never>
        /// Callers waiting that have not been cancelled.
        var waiting = 0
        var observers: [@Sendable (SyncProgress) -> Void] = []
    }

    /// Syncs until the outbox is empty and catch-up is complete, or joins the sync that will
    /// (see "One sync at a time" above).
    ///
    /// Cancelling a caller cancels the sync it waits for only when no other caller waits for
    /// it; the rounds completed until then stay applied.
    ///
    /// - Parameters:
    ///   - maxRounds: A bound against a server that never settles (each round that makes
    ///     progress counts). A call that joins a sync keeps that sync's bound.
    ///   - progress: Called after each round of the sync this call runs or joins.
    /// - Returns: What the sync did (a joined sync's summary is the same for every caller).
    /// - Throws: ``SyncError``, which says whether trying again later may succeed.
    public func sync(maxRounds: Int = 1_000, progress: (@Sendable (SyncProgress) -> Void)? = nil) async throws(SyncError) -> SyncSummary {
        let id: Int
        if let queued {
            id = queued.id
        } else {
            id = schedule(after: running?.task, maxRounds: maxRounds)
        }
        update(id) {
            $0.waiting += 1
            if let progress { $0.observers.append(progress) }
        }
        let task = running?.id == id ? running!.task : queued!.task
        let result = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            Task { await self.abandon(id) }
        }
        return try result.get()
    }

    /// Creates the job that runs after `previous` (at once without one).
    private func schedule(after previous: Task<Result<SyncSummary, SyncError>, Never>?, maxRounds: Int) -> Int {
        jobs += 1
        let id = jobs
        let task = Task { () -> Result<SyncSummary, SyncError> in
            if let previous { _ = await previous.value }
            if queued?.id == id { (running, queued) = (queued, nil) }
            let result = await run(job: id, maxRounds: maxRounds)
            if running?.id == id { running = nil }
            syncEnded(result)
            return result
        }
        if previous == nil { running = Job(id: id, task: task) } else { queued = Job(id: id, task: task) }
        updateState { $0.isSyncing = true }
        return id
    }

    /// Whether a sync runs or waits to run.
    var isSyncing: Bool { running != nil || queued != nil }

    /// Returns when no sync runs or waits to run.
    func waitForSyncs() async {
        while let job = queued ?? running { _ = await job.task.value }
    }

    private func update(_ id: Int, _ change: (inout Job) -> Void) {
        if running?.id == id { change(&running!) } else if queued?.id == id { change(&queued!) }
    }

    /// A waiting caller was cancelled: the last one to go cancels the job.
    private func abandon(_ id: Int) {
        update(id) { job in
            job.waiting -= 1
            if job.waiting == 0 { job.task.cancel() }
        }
    }

    func report(_ progress: SyncProgress, job id: Int) {
        let observers = running?.id == id ? running!.observers : []
        for observer in observers { observer(progress) }
        updateState { $0.progress = progress }
    }
}
