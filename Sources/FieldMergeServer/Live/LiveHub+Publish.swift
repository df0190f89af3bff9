import FieldMerge
import FieldMergeProtocol

extension LiveHub {
    /// What one step tells one subscriber, and where it leaves it.
    struct Update {
        var event: LiveEvent?
        var cursor: Int64
        var seen: Int64
        var grants: [RootSet]?
    }

    /// Reads steps until every subscriber has seen the latest revision the hub was told of.
    func publish(_ server: RevisionServer) async {
        while true {
            // A burst waits for the interval, and its commits are read together.
            let pause = state.withLock { state in state.lastStep.map { $0 + options.minInterval - .now } }
            if let pause, pause > .zero { try? await Task.sleep(for: pause) }
            guard let lagging = nextStep() else { return }
            state.withLock {
                $0.lastStep = .now
                $0.steps += 1
            }
            let (revision, updates) = await step(lagging, server: server)
            let sends = state.withLock { state -> [(Sink, LiveEvent)] in
                state.published = max(state.published, revision)
                // A revision the storage does not have yet is looked for again only when the
                // hub is told of a commit (no step after step for nothing).
                state.target = state.told ? max(state.target, revision) : revision
                var sends: [(Sink, LiveEvent)] = []
                sends.reserveCapacity(updates.count)
                for (id, update) in updates {
                    // In place: no copy of the subscriber in and out of the dictionary.
                    guard let index = state.subscribers.index(forKey: id) else { continue }
                    state.subscribers.values[index].cursor = update.cursor
                    state.subscribers.values[index].seen = update.seen
                    if let grants = update.grants { state.subscribers.values[index].grants = grants }
                    if let event = update.event { sends.append((state.subscribers.values[index].sink, event)) }
                }
                return sends
            }
            // Outside the lock: a sink's buffer policy drops its oldest event when full.
            for (sink, event) in sends { sink.yield(event) }
        }
    }

    /// The subscribers behind the latest revision, or nil: publishing ends.
    private func nextStep() -> [Int: Subscriber]? {
        state.withLock { state in
            let target = state.target
            let lagging = state.subscribers.filter { needsStep($0.value, target: target) }
            guard lagging.isEmpty else {
                state.told = false
                return lagging
            }
            state.published = max(state.published, state.target)
            state.publishing = false
            return nil
        }
    }

    /// One step for `lagging`: the server's latest revision and each subscriber's update.
    /// When the storage fails, every one of them is poked (its device's sync will tell).
    private func step(_ lagging: [Int: Subscriber], server: RevisionServer) async -> (Int64, [Int: Update]) {
        let target = state.withLock { state in state.target }
        do {
            return scoped
                ? try await scopedStep(lagging, server: server)
                : try await pageStep(lagging, server: server)
        } catch {
            // Grants unknown after a failure: empty, so the next step that works pokes.
            return (target, lagging.mapValues { _ in
                Update(event: .poke(revision: target), cursor: target, seen: target, grants: scoped ? [] : nil)
            })
        }
    }

    /// Without scopes: one page per distinct `seen` (all of them, usually), filtered by what
    /// each identity may read and encoded once per distinct filter.
    private func pageStep(_ lagging: [Int: Subscriber], server: RevisionServer) async throws -> (Int64, [Int: Update]) {
        let (latest, pages) = try await server.livePages(after: Set(lagging.values.map(\.seen)), limit: options.maxRecords)
        let readable = server.options.readable
        let names = server.schema.entities.map(\.name)
        // The encoded page, by its `seen` and the entities its readers may read.
        var encoded: [EncodingKey: [UInt8]?] = [:]
        var compressed: [EncodingKey: [UInt8]] = [:]
        var updates: [Int: Update] = [:]
        for (id, subscriber) in lagging {
            let poke = Update(event: .poke(revision: latest), cursor: latest, seen: latest)
            guard let found = pages[subscriber.seen], let page = found else {
                updates[id] = poke
                continue
            }
            let mask = readable.map { readable in names.map { readable(subscriber.identity, $0) } } ?? []
            let key = EncodingKey(seen: subscriber.seen, readable: mask, version: subscriber.version?.older.fingerprint)
            let json: [UInt8]?
            if let made = encoded[key] {
                json = made
            } else {
                json = Self.encode(page, for: subscriber, readable: readable, codec: server.codec)
                encoded[key] = json
            }
            guard let json else {
                // Nothing it may read changed: no event, no wake-up.
                updates[id] = Update(event: nil, cursor: subscriber.cursor, seen: page.maxRevision)
                continue
            }
            guard subscriber.takesPages,
                let event = pageEvent(json, key: key, for: subscriber, revision: page.maxRevision, compressed: &compressed)
            else {
                updates[id] = poke
                continue
            }
            updates[id] = Update(event: event, cursor: page.maxRevision, seen: page.maxRevision)
        }
        return (latest, updates)
    }

    /// The event that brings `subscriber` to `revision` with the page `json`: gzip'd in
    /// base64 (made once per `key`, kept in `compressed`) for a device that reads compressed
    /// pages when the page is at least ``Options/compressFrom`` bytes, else as it is; nil when
    /// what would be sent exceeds ``Options/maxBytes`` (the device is poked instead).
    private func pageEvent<Key: Hashable>(
        _ json: [UInt8], key: Key, for subscriber: Subscriber, revision: Int64, compressed: inout [Key: [UInt8]]
    ) -> LiveEvent? {
        guard subscriber.takesCompressed, json.count >= options.compressFrom else {
            return json.count <= options.maxBytes ? .changes(after: subscriber.cursor, revision: revision, response: json) : nil
        }
        let body: [UInt8]
        if let made = compressed[key] {
            body = made
        } else {
            body = Base64.encode(Gzip.compress(json))
            compressed[key] = body
        }
        return body.count <= options.maxBytes ? .compressedChanges(after: subscriber.cursor, revision: revision, body: body) : nil
    }

    private struct EncodingKey: Hashable {
        var seen: Int64
        var readable: [Bool]
        /// The fingerprint of the older schema version it is written in (nil: the current).
        var version: String?
    }

    /// `page` as `subscriber` reads it: without what its identity may not read, in its
    /// schema version; nil when nothing is left.
    private static func encode(_ page: SyncResponse, for subscriber: Subscriber, readable: RevisionServer.ReadFilter?, codec: WireCodec) -> [UInt8]? {
        var filtered = readable.map { RevisionServer.readableOnly(page, by: subscriber.identity, $0) } ?? page
        if let version = subscriber.version { filtered = version.project(filtered) }
        guard filtered.changeSets.contains(where: { !$0.entities.isEmpty }) else { return nil }
        return (subscriber.version?.codec ?? codec).encode(filtered)
    }

    private struct ScopedEncodingKey: Hashable {
        var query: Int
        var version: String?
    }

    /// With scopes: whether anything each subscriber's device keeps changed (or its grants
    /// did), asked once per distinct identity and `seen`. A device told so gets the changes
    /// as a page when it takes scoped pages and they are small (encoded once per query), else
    /// a poke, and syncs itself.
    private func scopedStep(_ lagging: [Int: Subscriber], server: RevisionServer) async throws -> (Int64, [Int: Update]) {
        var queries: [LiveQuery] = []
        var index: [LiveQuery: Int] = [:]
        func query(_ subscriber: Subscriber) -> LiveQuery {
            LiveQuery(
                identity: subscriber.identity, subscriptions: subscriber.subscriptions, after: subscriber.seen,
                pages: subscriber.takesPages && subscriber.takesScopedPages)
        }
        for subscriber in lagging.values {
            let query = query(subscriber)
            if index[query] == nil {
                index[query] = queries.count
                queries.append(query)
            }
        }
        let (latest, answers) = try await server.liveNews(queries, pages: options.maxRecords)
        let readable = server.options.readable
        // Each query's page as sent, per schema version: encoded once, nil when nothing it
        // may read is in it.
        var encoded: [ScopedEncodingKey: [UInt8]?] = [:]
        var compressed: [ScopedEncodingKey: [UInt8]] = [:]
        var updates: [Int: Update] = [:]
        for (id, subscriber) in lagging {
            let position = index[query(subscriber)]!
            let answer = answers[position]
            // A new subscriber's grants are learnt now: news only if anything committed since
            // it subscribed (its device synced up to then at most; one sync too many at worst).
            let regranted = subscriber.grants == nil ? latest > subscriber.seen : subscriber.grants != answer.grants
            let poke = Update(event: .poke(revision: latest), cursor: latest, seen: latest, grants: answer.grants)
            guard !regranted else {
                updates[id] = poke
                continue
            }
            guard answer.news else {
                updates[id] = Update(event: nil, cursor: subscriber.cursor, seen: latest, grants: answer.grants)
                continue
            }
            guard let page = answer.page else {
                updates[id] = poke
                continue
            }
            let key = ScopedEncodingKey(query: position, version: subscriber.version?.older.fingerprint)
            let json: [UInt8]?
            if let made = encoded[key] {
                json = made
            } else {
                json = Self.encode(page, for: subscriber, readable: readable, codec: server.codec)
                encoded[key] = json
            }
            guard let json else {
                // Nothing it may read changed: no event, no wake-up.
                updates[id] = Update(event: nil, cursor: subscriber.cursor, seen: latest, grants: answer.grants)
                continue
            }
            guard let event = pageEvent(json, key: key, for: subscriber, revision: latest, compressed: &compressed) else {
                updates[id] = poke
                continue
            }
            updates[id] = Update(event: event, cursor: latest, seen: latest, grants: answer.grants)
        }
        return (latest, updates)
    }
}

/// One question of a scoped step: did anything `identity`'s devices keep change after `after`?
struct LiveQuery: Hashable {
    var identity: SyncIdentity?
    /// The roots the device subscribes to.
    var subscriptions: ScopeHoldings?
    var after: Int64
    /// Whether its subscribers take scoped pages (the page is read, not only whether there is one).
    var pages = false
}
