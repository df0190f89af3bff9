import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import HTTPTypes
import Hummingbird
import NIOCore

extension SyncResponder {
    /// The console's static files: the page, its script, its style. They hold no data.
    static let consoleFiles: [String: (contentType: String, body: String)] = [
        "/console": ("text/html; charset=utf-8", ConsolePage.html),
        "/console/console.js": ("text/javascript; charset=utf-8", ConsolePage.script),
        "/console/console.css": ("text/css; charset=utf-8", ConsolePage.style),
    ]

    /// The console's overview.
    static let consoleOverviewPath = "/console/api/overview"

    /// Adds the console's routes.
    func addConsoleRoutes<Context: SyncRequestContext>(to router: Router<Context>, methods: [HTTPRequest.Method]) {
        for method in methods {
            for path in Self.consoleFiles.keys.sorted() {
                router.on(RouterPath(path), method: method) { request, _ in
                    guard request.uri.path == path, configuration.console != nil else { return notFound(request) }
                    guard request.method == .get || request.method == .head else { return methodNotAllowed(allow: "GET, HEAD") }
                    return consoleFile(path, head: request.method == .head)
                }
            }
            router.on(RouterPath(Self.consoleOverviewPath), method: method) { request, context in
                guard request.uri.path == Self.consoleOverviewPath, configuration.console != nil else { return notFound(request) }
                guard request.method == .get else { return methodNotAllowed(allow: "GET") }
                return await consoleOverview(request, context: context)
            }
        }
    }

    /// Headers of every console answer: never cached, never framed, nothing loaded from
    /// elsewhere.
    static let consoleHeaders: HTTPFields = [
        .cacheControl: "no-store",
        HTTPField.Name("Content-Security-Policy")!: "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
    ]

    func consoleFile(_ path: String, head: Bool) -> Response {
        guard let file = Self.consoleFiles[path] else { return errorResponse(.notFound, WireErrorBody(error: "notFound", message: path)) }
        var headers = Self.consoleHeaders
        headers[.contentType] = file.contentType
        var response = Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: file.body)))
        if head { response = response.createHeadResponse() }
        return response
    }

    /// Why a request may not read the overview (nil: it may): a verified identity needs the
    /// console's role (and, on a multi-tenant endpoint, no tenant: the console shows them
    /// all); without an identity, only a loopback client.
    func consoleRefusal<Context: SyncRequestContext>(_ context: Context, console: SyncConsole) -> WireErrorBody? {
        if let identity = context.syncIdentity {
            guard identity.roles.contains(console.role) else {
                return WireErrorBody(error: "forbidden", message: "the console needs the role '\(console.role)' in the token")
            }
            if !host.isSingle, let tenant = identity.tenant {
                return WireErrorBody(
                    error: "forbidden",
                    message: "the console shows every tenant: it needs a token with the role '\(console.role)' and no tenant (this one names '\(tenant)')")
            }
            return nil
        }
        let peer = (context as? any RemoteAddressRequestContext)?.remoteAddress
        guard let peer, Self.isLoopback(peer) else {
            return WireErrorBody(error: "forbidden", message: "without authentication the console answers loopback clients only")
        }
        return nil
    }

    /// `GET /console/api/overview`.
    func consoleOverview<Context: SyncRequestContext>(_ request: Request, context: Context) async -> Response {
        guard let console = configuration.console, let tracker = consoleTracker else { return notFound(request) }
        if let refusal = consoleRefusal(context, console: console) {
            var response = errorResponse(.forbidden, refusal)
            response.headers[.cacheControl] = "no-store"
            return response
        }
        let statistics = await tracker.statistics(console)
        let body = ConsoleOverview(
            console: console, tracker: tracker, host: host, statistics: statistics, identity: context.syncIdentity
        ).json()
        var headers = Self.consoleHeaders
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// The overview's JSON (Specs/http.md, "The operator's console"), bounded: the devices
/// furthest behind, the largest entities, the last hour, the last failures.
struct ConsoleOverview {
    let console: SyncConsole
    let tracker: ConsoleTracker
    let host: RevisionServerHost
    let statistics: (value: Result<ConsoleDataSetStatistics, ConsoleTracker.ConsoleStatisticsError>, readAt: Int64)?
    let identity: SyncIdentity?

    /// One row of the devices' table.
    struct DeviceRow {
        var client: String
        var tenant: String?
        var user: String?
        var lastSeen: Int64
        var reached: Int64?
        var behind: Int64?
        var hasMore = false
        var requests = 0
        var conflicts = 0
        var refusals = 0
        var lastStatus: Int?
        var lastError: String?
    }

    func json() -> [UInt8] {
        let now = tracker.now
        let state = tracker.state.withLock { $0 }
        let stats: ConsoleDataSetStatistics? = if case .success(let value)? = statistics?.value { value } else { nil }
        var out = JSONWriter()
        out.open("{")
        out.field("generatedAt", now)
        out.field("startedAt", tracker.started)
        out.field("role", console.role)
        out.field("storage", console.storage)
        out.field("viewer", identity?.user)
        // The server.
        out.key("server")
        out.open("{")
        switch host.source {
        case .single:
            out.field("revision", max(host.maxRevision, stats?.revision ?? 0))
        case .tenants(let directory):
            out.fieldNull("revision")
            let now = directory.statistics
            out.key("tenants")
            out.open("{")
            out.field("open", now.open)
            out.field("inUse", now.inUse)
            out.field("seen", state.revisions.count)
            out.close("}")
        }
        out.close("}")
        // Totals and the rate of the last five minutes.
        out.key("totals")
        counts(state.totals, to: &out)
        let thisMinute = now / 60_000 * 60_000
        let minutes: [ConsoleTracker.Counts] = (0..<ConsoleTracker.minutes).reversed().map { back in
            let minute = thisMinute - Int64(back) * 60_000
            let slot = state.minutes[Int(minute / 60_000 % Int64(ConsoleTracker.minutes))]
            return slot.minute == minute ? slot : ConsoleTracker.Counts(minute: minute)
        }
        let lastFive = minutes.suffix(5)
        // The minutes of the last five the process was running (a process up for one minute
        // has a rate over one minute, not five).
        let span = max(1.0, min(5.0, Double(now - tracker.started) / 60_000))
        out.key("rate")
        out.open("{")
        out.field("revisionsPerMinute", Double(lastFive.reduce(0) { $0 + $1.revisions }) / span)
        out.field("requestsPerMinute", Double(lastFive.reduce(0) { $0 + $1.requests }) / span)
        out.close("}")
        out.key("minutes")
        out.open("[")
        for minute in minutes { counts(minute, to: &out) }
        out.close("]")
        // Devices, the furthest behind first.
        devices(state, stats: stats, now: now, to: &out)
        // Entities, the largest first.
        entities(state, stats: stats, to: &out)
        out.key("refusals")
        out.open("[")
        for (key, count) in state.refusalsByKey.sorted(by: { ($1.value, $0.key.entity, $0.key.code) < ($0.value, $1.key.entity, $1.key.code) }) {
            out.open("{")
            out.field("entity", key.entity)
            out.field("code", key.code)
            out.field("count", count)
            out.close("}")
        }
        out.close("]")
        out.key("failures")
        out.open("[")
        for failure in state.failures.reversed() {
            out.open("{")
            out.field("time", failure.time)
            out.field("status", failure.status)
            out.field("code", failure.code)
            out.field("client", failure.client)
            out.field("message", failure.message)
            out.close("}")
        }
        out.close("]")
        // The data set, as its storage says it.
        out.key("dataSet")
        out.open("{")
        switch statistics?.value {
        case nil:
            out.field("available", false)
            out.field(
                "note",
                host.isSingle
                    ? "this storage gives no statistics (records per entity, file size, devices seen before the process started): SQLite does, PostgreSQL not yet"
                    : "with tenants, each tenant's data set has its own statistics (fieldmerge admin stats FILE)")
        case .failure(let error)?:
            out.field("available", false)
            out.field("note", "the statistics could not be read: \(error.message)")
        case .success(let stats)?:
            out.field("available", true)
            out.field("readAt", statistics?.readAt ?? 0)
            out.field("logEntries", stats.logEntries)
            out.field("storedReplies", stats.devices.count)
            out.field("fileBytes", stats.fileBytes)
            out.field("freeBytes", stats.freeBytes)
        }
        out.close("}")
        out.close("}")
        return out.bytes
    }

    private func counts(_ counts: ConsoleTracker.Counts, to out: inout JSONWriter) {
        out.open("{")
        if counts.minute != 0 { out.field("minute", counts.minute) }
        out.field("requests", counts.requests)
        out.field("ok", counts.ok)
        out.field("conflicts", counts.conflicts)
        out.field("refusals", counts.refusals)
        out.field("rejected", counts.rejected)
        out.field("retryable", counts.retryable)
        out.field("revisions", counts.revisions)
        out.field("records", counts.records)
        out.close("}")
    }

    private func devices(_ state: ConsoleTracker.State, stats: ConsoleDataSetStatistics?, now: Int64, to out: inout JSONWriter) {
        var rows: [DeviceRow] = []
        var seen = Set<String>()
        for device in state.devices.values {
            let current = host.isSingle ? max(host.maxRevision, stats?.revision ?? 0) : state.revisions[device.tenant ?? ""] ?? device.reached
            rows.append(DeviceRow(
                client: device.client, tenant: device.tenant, user: device.user, lastSeen: device.lastSeen, reached: device.reached,
                behind: max(0, current - device.reached), hasMore: device.hasMore, requests: device.requests,
                conflicts: device.conflicts, refusals: device.refusals, lastStatus: device.lastStatus, lastError: device.lastError))
            if device.tenant == nil { seen.insert((device.user ?? "") + "\u{0}" + device.client) }
        }
        // Devices the storage knows that have not synced since the process started: how far
        // behind they are is not known, only when they were last seen.
        for stored in stats?.devices ?? [] {
            let (client, user) = Self.storedDevice(stored)
            guard !seen.contains((user ?? "") + "\u{0}" + client) else { continue }
            rows.append(DeviceRow(client: client, user: user, lastSeen: stored.lastSeen))
        }
        let total = rows.count
        rows.sort { a, b in
            switch (a.behind, b.behind) {
            case (let x?, let y?) where x != y: return x > y
            case (.some, nil): return true
            case (nil, .some): return false
            default: return (a.lastSeen, a.client) < (b.lastSeen, b.client)
            }
        }
        out.key("devices")
        out.open("{")
        out.field("known", total)
        out.field("tracked", state.devices.count)
        out.field("syncedLastHour", state.devices.values.count(where: { now - $0.lastSeen < 3_600_000 }))
        out.key("list")
        out.open("[")
        for row in rows.prefix(console.maxDevices) {
            out.open("{")
            out.field("client", row.client)
            out.field("tenant", row.tenant)
            out.field("user", row.user)
            out.field("lastSeen", row.lastSeen)
            out.field("reached", row.reached)
            out.field("behind", row.behind)
            out.field("hasMore", row.hasMore)
            out.field("requests", row.requests)
            out.field("conflicts", row.conflicts)
            out.field("refusals", row.refusals)
            out.field("lastStatus", row.lastStatus)
            out.field("lastError", row.lastError)
            out.close("}")
        }
        out.close("]")
        out.close("}")
    }

    /// The client and user of a stored reply: the server keys an authenticated device's
    /// reply `<length of user>:<user>/<client>` and names its owner `<length>:<user>`.
    static func storedDevice(_ device: ConsoleDataSetStatistics.Device) -> (client: String, user: String?) {
        guard !device.user.isEmpty, let colon = device.user.firstIndex(of: ":") else { return (device.client, nil) }
        let user = String(device.user[device.user.index(after: colon)...])
        let prefix = device.user + "/"
        return (device.client.hasPrefix(prefix) ? String(device.client.dropFirst(prefix.count)) : device.client, user)
    }

    private func entities(_ state: ConsoleTracker.State, stats: ConsoleDataSetStatistics?, to out: inout JSONWriter) {
        struct Row {
            var name: String
            var records: Int?
            var tombstones: Int?
            var applied = 0, conflicts = 0, refusals = 0
        }
        var rows: [String: Row] = [:]
        for entity in stats?.entities ?? [] {
            rows[entity.name] = Row(name: entity.name, records: entity.records, tombstones: entity.tombstones)
        }
        for (name, count) in state.appliedByEntity { rows[name, default: Row(name: name)].applied += count }
        for (name, count) in state.conflictsByEntity { rows[name, default: Row(name: name)].conflicts += count }
        for (key, count) in state.refusalsByKey { rows[key.entity, default: Row(name: key.entity)].refusals += count }
        let sorted = rows.values.sorted {
            let a = ($0.records ?? 0) + ($0.tombstones ?? 0), b = ($1.records ?? 0) + ($1.tombstones ?? 0)
            return a != b ? a > b : $0.applied != $1.applied ? $0.applied > $1.applied : $0.name < $1.name
        }
        out.key("entities")
        out.open("[")
        for row in sorted.prefix(console.maxEntities) {
            out.open("{")
            out.field("name", row.name)
            out.field("records", row.records)
            out.field("tombstones", row.tombstones)
            out.field("applied", row.applied)
            out.field("conflicts", row.conflicts)
            out.field("refusals", row.refusals)
            out.close("}")
        }
        out.close("]")
    }
}

/// A JSON text written in order: commas where they belong, strings escaped.
struct JSONWriter {
    var bytes: [UInt8] = []
    private var first = true

    mutating func open(_ bracket: String) {
        comma()
        bytes.append(contentsOf: bracket.utf8)
        first = true
    }

    mutating func close(_ bracket: String) {
        bytes.append(contentsOf: bracket.utf8)
        first = false
    }

    mutating func key(_ name: String) {
        comma()
        JSONString.append(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        first = true
    }

    private mutating func comma() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
    }

    private mutating func raw(_ text: String) {
        comma()
        bytes.append(contentsOf: text.utf8)
    }

    mutating func field(_ name: String, _ value: String?) {
        key(name)
        if let value {
            comma()
            JSONString.append(value, to: &bytes)
        } else {
            raw("null")
        }
    }

    mutating func field(_ name: String, _ value: (some BinaryInteger)?) {
        key(name)
        raw(value.map { "\($0)" } ?? "null")
    }

    mutating func field(_ name: String, _ value: Double) {
        key(name)
        raw(value.isFinite ? "\((value * 100).rounded() / 100)" : "null")
    }

    mutating func field(_ name: String, _ value: Bool) {
        key(name)
        raw(value ? "true" : "false")
    }

    mutating func fieldNull(_ name: String) {
        key(name)
        raw("null")
    }
}
