import FieldMergeProtocol
import FieldMergeSQLite

/// Several catch-up pages per store transaction (``CatchUpCommits``).
///
/// The transaction stays open across the awaits between pages, so other work on the
/// client's executor could run while it is open. None of it runs inside it: every call on
/// the client that uses the store (``write(_:)``, ``withStore(_:)``, ``read(_:)`` on an
/// in-memory store, subscriptions, live queries) first commits it with
/// ``releaseCatchUp()``, and the catch-up begins a new one with its next page. After each
/// page the catch-up lets such calls in (`Task.yield()`), so an app's write waits for at
/// most the page being applied.
extension SyncClient {
    /// Applies one catch-up page inside the catch-up's transaction (begun here when none is
    /// open), and commits when the page ends the catch-up or reaches a bound of
    /// ``catchUpCommits``.
    func applyHeld(_ response: SyncResponse, with applier: inout ResponseApplier) throws -> ResponseApplier.Outcome {
        try holdingPage {
            (response, try probe.measure(.clientApply) { try applier.apply(response, answersFrom: response.changeSets.count) })
        }.outcome
    }

    /// ``applyHeld(_:with:)`` for a page being read in pieces on another thread
    /// (``Exchange/undecoded``): each piece is merged and written as it comes, so that
    /// neither the whole page decoded nor its merge is ever held. A page found malformed
    /// after some pieces were written fails like a page whose writing failed: the
    /// catch-up's transaction rolls back (``settleCatchUp()``).
    /// - Returns: The page without its records, and what applying it did.
    func applyHeld(undecoded pieces: PagePieces, with applier: inout ResponseApplier) throws -> (SyncResponse, ResponseApplier.Outcome) {
        try holdingPage {
            try probe.measure(.clientApply) {
                let page = try store.applyingPieces {
                    while true {
                        switch pieces.next() {
                        case .piece(let piece): try applier.apply(piece: piece)
                        case .end(let page): return page
                        case .failed(let error): throw error
                        }
                    }
                }
                return (page, try applier.apply(page, answersFrom: page.changeSets.count))
            }
        }
    }

    /// Runs `apply` (one catch-up page) inside the catch-up's transaction, begun here when
    /// none is open, and commits when the page ends the catch-up or reaches a bound of
    /// ``catchUpCommits``.
    private func holdingPage(
        _ apply: () throws -> (page: SyncResponse, outcome: ResponseApplier.Outcome)
    ) throws -> (page: SyncResponse, outcome: ResponseApplier.Outcome) {
        if catchUp == nil {
            try store.beginHeldTransaction()
            catchUpGeneration += 1
            catchUp = CatchUpWindow(began: commitClock.now, generation: catchUpGeneration)
        }
        catchUp?.changesBeforePage = store.database.totalChanges
        let (response, applied) = try apply()
        guard var window = catchUp else { return (response, applied) }
        window.changesBeforePage = nil
        window.pages += 1
        window.records += applied.received
        catchUp = window
        if !response.hasMore || window.records >= catchUpCommits.records || commitClock.now - window.began >= catchUpCommits.interval {
            try commitCatchUp()
        }
        return (response, applied)
    }

    /// Commits the catch-up's transaction, if one is open: its changes reach the observers
    /// now. When the commit fails, its pages are rolled back (the next round fetches them
    /// again) and the error is thrown.
    func commitCatchUp() throws(StoreError) {
        guard catchUp != nil else { return }
        catchUp = nil
        try probe.measure(.clientApply) { () throws(StoreError) in try store.commitHeldTransaction() }
        catchUpCommitCount += 1
        committed()
    }

    /// Commits the catch-up's transaction so that other work can use the store; a failed
    /// commit rolls its pages back, which the catch-up then fetches again (it checks the
    /// revision the store stands at before using a page).
    func releaseCatchUp() {
        try? commitCatchUp()
    }

    /// After a failure: pages applied whole are committed; when the failure came while a
    /// page was writing, that page cannot be told from the pages before it (they share the
    /// transaction, without a savepoint, which would cost a third of the apply), and all
    /// of it is rolled back: the next sync fetches it again.
    func settleCatchUp() {
        guard let window = catchUp else { return }
        if let before = window.changesBeforePage, store.database.totalChanges != before {
            catchUp = nil
            store.rollBackHeldTransaction()
        } else {
            releaseCatchUp()
        }
    }

    /// Runs `body` (an await for the network): when the catch-up's transaction is open, it is
    /// committed if `body` takes it past ``CatchUpCommits/interval``.
    func awaitingNetwork<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let window = catchUp else { return try await body() }
        let deadline = window.began + catchUpCommits.interval
        let clock = commitClock
        let timer = Task {
            try await clock.sleep(until: deadline)
            self.releaseCatchUp(generation: window.generation)
        }
        defer { timer.cancel() }
        return try await body()
    }

    private func releaseCatchUp(generation: Int) {
        guard catchUp?.generation == generation else { return }
        releaseCatchUp()
    }

    /// Lets calls waiting for the client's executor run (each commits the catch-up's
    /// transaction first) before the next round: awaiting a page that has already arrived
    /// does not suspend, so without this they would wait for the whole catch-up.
    func letWaitingWorkIn() async {
        await Task.yield()
    }
}
