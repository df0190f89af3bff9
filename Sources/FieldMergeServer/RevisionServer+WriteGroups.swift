import FieldMergeProtocol

/// Group commit: on a storage whose statements are round trips to a database
/// (``ServerStorage/groupsWrites``), the write requests that queue behind the one in progress
/// are answered together, in arrival order, in one write transaction. Each is answered exactly
/// as it would be alone, one after another (each sees the ones before it; its revisions follow
/// theirs), but the group pays one `BEGIN`, one lock of the data set's state and one `COMMIT`,
/// and no answer leaves before the group committed. When any request of a group fails, the
/// group's transaction rolls back whole and each of its requests runs again alone, so a failure
/// is only ever its own request's. Specs/http.md §8, "Writes in groups".
extension RevisionServer {
    /// A request with change sets, ready for its transaction.
    struct QueuedWrite {
        var request: SyncRequest
        /// The change sets as the client sent them (their digest is kept with the reply).
        var sent: [ChangeSet]
        var identity: SyncIdentity?
        var owner: String
        var replyKey: String?
        /// The attachments it references whose bytes are missing (``missingAttachments``).
        var missing: Set<String>
        var answered: CheckedContinuation<Result<GroupedAnswer, ServerError>, Never>?
        /// When it was queued.
        var queued = ContinuousClock.now
    }

    struct GroupedAnswer {
        var response: SyncResponse
        var replayed: Bool
        var before: Int64
        var after: Int64
    }

    /// The most records of change sets one group carries; a larger request runs alone.
    static let writeGroupRecords = 10_000

    /// Queues `write` and waits for its group's answer. The group runs on a task of its own, so
    /// a request whose caller is cancelled does not fail the others.
    func inWriteGroup(_ write: QueuedWrite) async throws(ServerError) -> GroupedAnswer {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<GroupedAnswer, ServerError>, Never>) in
            var queued = write
            queued.answered = continuation
            queued.queued = .now
            queuedWrites.append(queued)
            if storage.concurrentWrites > 1 {
                startGroups()
            } else if !drainingWrites {
                drainingWrites = true
                Task { await self.drainWrites() }
            }
        }
        return try result.get()
    }

    /// Answers the queued writes, a group per turn, until none waits.
    private func drainWrites() async {
        while !queuedWrites.isEmpty {
            await turnstile.enter()
            let group = takeGroup()
            let answers = await answerGroup(group)
            turnstile.leave()
            for (write, answer) in zip(group, answers) { write.answered?.resume(returning: answer) }
        }
        drainingWrites = false
    }

    /// How long a queued write waits for running groups that are all small to end (and joins
    /// the next group with the writes queued meanwhile) before a group starts beside them:
    /// 10 ms. Writes behind short groups so still share a transaction, as one at a time they
    /// would (with none kept waiting, `bench serve` answered 590–694 requests/s at p99
    /// 112–124 ms; so, 710–715 at 78–80 ms).
    static let besideAfter: Duration = .milliseconds(10)
    /// A group of at least this many records is large: a write queued while one runs starts
    /// beside it at once (a small write behind a large upload; the wait above is measured
    /// on the server's own executor, which such a group keeps busy).
    static let largeGroupRecords = 1_000

    /// On a storage whose writes run beside each other: starts a group of the queued writes,
    /// each on a task of its own, while fewer than ``ServerStorage/concurrentWrites`` run: at
    /// once when none runs or a large one does, else once the oldest has waited
    /// ``besideAfter``; a group that ends starts the next. No turnstile: the storage keeps the
    /// groups' transactions apart, and each keeps its clock and revision in a ``WriteContext``.
    private func startGroups() {
        while runningGroups < storage.concurrentWrites, let oldest = queuedWrites.first {
            if runningGroups > 0 && runningLargeGroups == 0 {
                let waited = ContinuousClock.now - oldest.queued
                guard waited >= Self.besideAfter else { return lookBeside(after: Self.besideAfter - waited) }
            }
            let group = takeGroup()
            let large = group.reduce(0) { $0 + Self.records(of: $1) } >= Self.largeGroupRecords
            runningGroups += 1
            if large { runningLargeGroups += 1 }
            Task {
                await self.answerBeside(group)
                if large { self.runningLargeGroups -= 1 }
                self.runningGroups -= 1
                self.startGroups()
            }
        }
    }

    /// How many records the change sets of `write` carry.
    static func records(of write: QueuedWrite) -> Int {
        write.request.changeSets.reduce(0) { total, changeSet in changeSet.entities.reduce(total) { $0 + $1.records.count } }
    }

    /// Looks again after `delay` (once, however many writes queue meanwhile).
    private func lookBeside(after delay: Duration) {
        guard !besideLookDue else { return }
        besideLookDue = true
        Task {
            try? await Task.sleep(for: delay)
            self.besideLookDue = false
            self.startGroups()
        }
    }

    /// ``answerGroup(_:)`` in a context of the group's own, then its answers.
    private func answerBeside(_ group: [QueuedWrite]) async {
        let context = WriteContext(clock: sharedClock, maxRevision: sharedMaxRevision)
        let answers = await WriteContext.$current.withValue(context) { await answerGroup(group) }
        if context.clock.last > sharedClock.last { sharedClock = context.clock }
        sharedMaxRevision = max(sharedMaxRevision, context.maxRevision)
        for (write, answer) in zip(group, answers) { write.answered?.resume(returning: answer) }
    }

    /// The next group: the oldest queued writes, at most ``Options/writeGroup`` of them and
    /// ``writeGroupRecords`` records (always at least one).
    private func takeGroup() -> [QueuedWrite] {
        var count = 0
        var records = 0
        for write in queuedWrites {
            let size = Self.records(of: write)
            if count > 0 && (count == options.writeGroup || records + size > Self.writeGroupRecords) { break }
            count += 1
            records += size
        }
        let group = Array(queuedWrites.prefix(count))
        queuedWrites.removeFirst(count)
        return group
    }

    /// Each write's answer: all in one transaction, or, when that fails, each alone.
    private func answerGroup(_ group: [QueuedWrite]) async -> [Result<GroupedAnswer, ServerError>] {
        if group.count > 1 {
            let start = maxRevision
            do {
                let answers = try await storage.write(reserving: reservation(for: group)) { () async throws -> [Result<GroupedAnswer, ServerError>] in
                    // (A storage may run the body again after a deadlock: from the start.)
                    maxRevision = start
                    var answers: [Result<GroupedAnswer, ServerError>] = []
                    answers.reserveCapacity(group.count)
                    for write in group { answers.append(.success(try await answerInTransaction(write))) }
                    return answers
                }
                writeGroupsCommitted += 1
                return answers
            } catch {
                // Nothing of the group committed: each runs again, alone.
                maxRevision = start
            }
        }
        var answers: [Result<GroupedAnswer, ServerError>] = []
        for write in group {
            let start = maxRevision
            do {
                answers.append(.success(try await storage.write(reserving: reservation(for: [write])) { () async throws -> GroupedAnswer in
                    maxRevision = start
                    return try await answerInTransaction(write)
                }))
            } catch {
                maxRevision = start
                answers.append(.failure(Self.serverError(error)))
            }
        }
        return answers
    }

    /// One write's answer inside the current transaction, with the revisions around it.
    private func answerInTransaction(_ write: QueuedWrite) async throws -> GroupedAnswer {
        let before = maxRevision
        missingAttachments = write.missing
        let (response, replayed) = try await writeAnswer(write)
        return GroupedAnswer(response: response, replayed: replayed, before: before, after: maxRevision)
    }

    // MARK: For tests

    /// How many writes wait for a group.
    package var queuedWriteCount: Int { queuedWrites.count }

    /// Takes the server's turn (as a request in progress would) until ``releaseTurn()``: the
    /// writes that arrive meanwhile queue, and form one group once it is released.
    package func holdTurn() async { await turnstile.enter() }
    package func releaseTurn() { turnstile.leave() }
}
