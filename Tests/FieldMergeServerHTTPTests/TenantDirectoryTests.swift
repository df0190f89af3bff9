import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import Foundation
import Synchronization
import Testing

/// A value tasks share.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value { mutex.withLock { $0 } }
    func update(_ body: (inout Value) -> Void) { mutex.withLock { body(&$0) } }
}

/// The tenant directory's life cycle: servers opened lazily, closed when idle, bounded in
/// number, never closed under a request that holds one, and no data set made by a read.
@Suite struct TenantDirectoryTests {
    /// A folder of its own for one test's tenant files.
    static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "fm-tenants-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func files(in folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
    }

    /// Answers `body` (a request's JSON) on `server`.
    static func send(_ body: [UInt8], to server: RevisionServer) async throws -> SyncResponse {
        try await server.handle(try WireCodec(schema: server.schema).decodeRequest(body))
    }

    /// The list names `server` sends a new device.
    static func listNames(_ server: RevisionServer) async throws -> [String] {
        let response = try await send(TenantTests.catchUp, to: server)
        return response.changeSets.flatMap(\.entities).filter { $0.entity == "lists" }.flatMap(\.records)
            .compactMap { record in if case .text(let name) = record.values[0] { name } else { nil } }
    }

    /// Whether `condition` holds within 5 seconds (looked at every 20 ms).
    static func eventually(_ condition: () async -> Bool) async throws -> Bool {
        for _ in 0..<250 {
            if await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test func anIdleTenant_isClosed_andReopensWithItsData() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tenants = TenantDirectory.sqliteFiles(
            in: folder, schema: try httpTestSchema(), limits: .init(maxOpen: 4, idleTime: .milliseconds(150)))
        let created = try await tenants.withServer(for: "acme") { try await Self.send(TenantTests.createHome, to: $0) }
        #expect(created.maxRevision == 1)
        #expect(await tenants.openTenants == ["acme"])
        #expect(FileManager.default.fileExists(atPath: folder + "/acme.sqlite-wal"))

        #expect(try await Self.eventually { tenants.statistics.open == 0 })  // closed, not only closing
        #expect(await tenants.openTenants.isEmpty)
        #expect(tenants.statistics.closedIdle == 1)
        // Both connections closed: SQLite moved the log into the file and removed it.
        #expect(try Self.files(in: folder) == ["acme.sqlite"])

        let lease = try await tenants.lease("acme", .existing)
        #expect(lease.exists)
        #expect(try await Self.listNames(lease.server) == ["Home"])
        #expect(await lease.server.maxRevision == 1)
        await lease.release()
    }

    @Test func aReadForATenantWithoutAFile_createsNothing_andAnswersRevision0() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tenants = TenantDirectory.sqliteFiles(in: folder, schema: try httpTestSchema())
        let lease = try await tenants.lease("ghost", .existing)
        #expect(!lease.exists)
        let answer = try await Self.send(TenantTests.catchUp, to: lease.server)
        #expect(answer.maxRevision == 0)
        #expect(answer.changeSets.flatMap(\.entities).isEmpty)
        await lease.release()
        #expect(try Self.files(in: folder).isEmpty)
        #expect(await tenants.openTenants.isEmpty)
        #expect(tenants.statistics.open == 0)

        // A write creates it.
        let written = try await tenants.withServer(for: "ghost") { try await Self.send(TenantTests.createHome, to: $0) }
        #expect(written.maxRevision == 1)
        #expect(try Self.files(in: folder).contains("ghost.sqlite"))
    }

    @Test func theBound_closesTheLeastRecentlyUsedIdleTenant_andRefusesWhenAllAreBusy() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tenants = TenantDirectory.sqliteFiles(in: folder, schema: try httpTestSchema(), limits: .init(maxOpen: 2, idleTime: nil))
        for tenant in ["a", "b", "a"] { await (try await tenants.lease(tenant)).release() }
        // a was used last: b is the least recently used, and goes.
        let c = try await tenants.lease("c")
        #expect(await tenants.openTenants == ["a", "c"])
        #expect(tenants.statistics.evicted == 1)
        let a = try await tenants.lease("a")
        // Both open servers are held: a third tenant is refused, retryably, and nothing closes.
        do {
            _ = try await tenants.lease("d")
            Issue.record("a third tenant was opened past the bound")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.status == 503)
            #expect(error.isRetryable)
        }
        #expect(tenants.statistics.refusedBusy == 1)
        #expect(tenants.statistics.inUse == 2)
        #expect(await tenants.openTenants == ["a", "c"])
        #expect(try await Self.listNames(a.server).isEmpty)  // still open and answering
        await c.release()
        let d = try await tenants.lease("d")
        #expect(await tenants.openTenants == ["a", "d"])
        await a.release()
        await d.release()
    }

    /// Many requests over more tenants than may be open: never more open than the bound,
    /// and every write lands in its tenant's file.
    @Test func underLoad_theOpenCountNeverExceedsTheBound() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schema = try httpTestSchema()
        let maxOpen = 3
        let highest = Shared(0)
        let directory = Shared<TenantDirectory?>(nil)
        let tenants = TenantDirectory(limits: .init(maxOpen: maxOpen, idleTime: .milliseconds(100))) { tenant, access in
            // The directory's count includes the server being opened now.
            let open = directory.value?.statistics.open ?? 0
            highest.update { $0 = max($0, open) }
            let path = folder + "/\(tenant).sqlite"
            guard access == .create || FileManager.default.fileExists(atPath: path) else { return nil }
            return try RevisionServer(.file(path: path), schema: schema)
        } empty: {
            try RevisionServer(.memory, schema: schema)
        }
        directory.update { $0 = tenants }
        let names = (0..<8).map { "t\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<40 {
                group.addTask {
                    let tenant = names[round % names.count]
                    while true {
                        do {
                            _ = try await tenants.withServer(for: tenant) { server in
                                highest.update { $0 = max($0, tenants.statistics.open) }
                                return try await Self.send(TenantTests.createHome, to: server)
                            }
                            return
                        } catch let error as ServerError where error.code == .unavailable {
                            try await Task.sleep(for: .milliseconds(5))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(highest.value <= maxOpen)
        #expect(highest.value >= 1)
        for tenant in names {
            let lists = try await tenants.withServer(for: tenant, access: .existing) { try await Self.listNames($0) }
            #expect(lists == Array(repeating: "Home", count: 5), "\(tenant)")
        }
    }

    /// A request holding a server across several idle times is never closed under, also
    /// when it arrived while the (slow) opening was under way; the opener runs once for
    /// every request that waited for it.
    @Test func aHeldServer_isNeverClosedUnderItsRequest() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schema = try httpTestSchema()
        let opened = Shared(0)
        let tenants = TenantDirectory(limits: .init(maxOpen: 1, idleTime: .milliseconds(50))) { tenant, _ in
            opened.update { $0 += 1 }
            try await Task.sleep(for: .milliseconds(200))
            return try RevisionServer(.file(path: folder + "/\(tenant).sqlite"), schema: schema)
        } empty: {
            try RevisionServer(.memory, schema: schema)
        }
        let leases = try await withThrowingTaskGroup(of: TenantDirectory.Lease.self) { group in
            for _ in 0..<5 { group.addTask { try await tenants.lease("acme") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(opened.value == 1)
        #expect(leases.allSatisfy { $0.server === leases[0].server })
        #expect(tenants.statistics.inUse == 1)
        try await Task.sleep(for: .milliseconds(300))  // six idle times
        #expect(await tenants.openTenants == ["acme"])
        #expect(try await Self.send(TenantTests.createHome, to: leases[0].server).maxRevision == 1)
        for lease in leases.dropLast() { await lease.release() }
        try await Task.sleep(for: .milliseconds(150))
        #expect(await tenants.openTenants == ["acme"], "one lease is still held")
        await leases.last!.release()
        #expect(try await Self.eventually { await tenants.openTenants.isEmpty })
        #expect(tenants.statistics.closedIdle == 1)
    }
}
