import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import Foundation
import Synchronization
import Testing

/// Several catch-up pages per store transaction (`CatchUpCommits`): the catch-up commits
/// on a bound and at its end, its observers hear each commit, and nothing is lost when it
/// fails or when an app writes in between. 25 lists on the server, pages of 10: pages end
/// at revisions 10, 20 and 25.
@Suite struct CatchUpCommitTests {
    static let never = CatchUpCommits(interval: .seconds(3_600), records: 1_000)

    func inserted(_ changes: [StoreChange]) -> [Int] { changes.map { $0.inserted["lists"]?.count ?? 0 } }

    /// Syncs `reader`, expecting pages 1 and 2 to commit together, then page 3 alone.
    func syncCommitsPagesOneAndTwoTogether(_ world: World, _ reader: SyncClient) async throws {
        let heard = await reader.listen()
        _ = try await reader.sync()
        #expect(await reader.catchUpCommitCount == 2)
        #expect(inserted(heard.changes) == [20, 5])
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func pagesWithinTheBounds_commitOnce_andTheFeedHearsThemOnce() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        await reader.setCatchUpCommits(Self.never, clock: ManualCommitClock())
        let heard = await reader.listen()
        let summary = try await reader.sync()
        #expect(summary.rounds == 3 && summary.received == 25)
        #expect(await reader.catchUpCommitCount == 1)
        #expect(heard.changes.map(\.origin) == [.sync])
        #expect(inserted(heard.changes) == [25])
        #expect(await transport.calls == 3)
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func zeroBounds_commitEveryPage() async throws {
        let (world, reader, _) = try await catchUpWorld()
        await reader.setCatchUpCommits(CatchUpCommits(interval: .zero, records: 1), clock: ManualCommitClock())
        let heard = await reader.listen()
        _ = try await reader.sync()
        #expect(await reader.catchUpCommitCount == 3)
        #expect(inserted(heard.changes) == [10, 10, 5])
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func theRecordBound_commitsThePageThatReachesIt() async throws {
        let (world, reader, _) = try await catchUpWorld()
        await reader.setCatchUpCommits(CatchUpCommits(interval: .seconds(3_600), records: 20), clock: ManualCommitClock())
        try await syncCommitsPagesOneAndTwoTogether(world, reader)
    }

    @Test func theTimeBound_commitsThePageThatEndsPastIt() async throws {
        let (world, reader, _) = try await catchUpWorld()
        let clock = ManualCommitClock()
        await reader.setCatchUpCommits(CatchUpCommits(interval: .milliseconds(250), records: 1_000), clock: clock)
        // Each page takes 150 ms on this clock: the second ends 300 ms after the transaction began.
        await reader.setApplyHook(StageCounter { stage, _ in if stage == .written { clock.advance(by: .milliseconds(150)) } }.hook)
        try await syncCommitsPagesOneAndTwoTogether(world, reader)
    }

    @Test func waitingForTheNetworkPastTheInterval_commitsWhatWasApplied() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        let clock = ManualCommitClock()
        await reader.setCatchUpCommits(CatchUpCommits(interval: .milliseconds(250), records: 1_000), clock: clock)
        let heard = await reader.listen()
        // The second page is slow to come: the transaction holding the first commits when
        // the interval is over, before the page arrives.
        await transport.before(2) { [weak reader] in
            clock.advance(by: .milliseconds(300))
            for _ in 0..<100_000 where await reader?.catchUpCommitCount == 0 { await Task.yield() }
        }
        _ = try await reader.sync()
        #expect(await reader.catchUpCommitCount == 2)
        #expect(inserted(heard.changes) == [10, 15])
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func aFailureBetweenPages_keepsEveryPageApplied() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        await reader.setCatchUpCommits(Self.never, clock: ManualCommitClock())
        await transport.fail(3)
        let heard = await reader.listen()
        await #expect(throws: SyncError.self) { _ = try await reader.sync() }
        #expect(await reader.inspect { $0.maxRevision } == 20)
        #expect(inserted(heard.changes) == [20])
        _ = try await reader.sync()
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func aFailureWhileAPageWrites_losesOnlyTheUncommittedPages_andTheNextSyncConverges() async throws {
        let (world, reader, _) = try await catchUpWorld(lists: 35)
        await reader.setCatchUpCommits(CatchUpCommits(interval: .seconds(3_600), records: 20), clock: ManualCommitClock())
        // Pages 1 and 2 commit together (20 records); page 3 waits in the transaction, page 4 fails half-written.
        await reader.setApplyHook(StageCounter { stage, count in if stage == .written && count == 4 { throw CatchUpCrash() } }.hook)
        let heard = await reader.listen()
        await #expect(throws: SyncError.self) { _ = try await reader.sync() }
        #expect(await reader.inspect { $0.maxRevision } == 20)
        #expect(try await reader.inspect { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(20))
        #expect(inserted(heard.changes) == [20])
        await reader.setApplyHook(nil)
        _ = try await reader.sync()
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func aCrashMidCatchUp_losesOnlyTheUncommittedPages_andTheNextSyncFetchesThem() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-catchup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("device.sqlite").path
        let crashed = folder.appendingPathComponent("crashed.sqlite").path
        let (world, reader, transport) = try await catchUpWorld(lists: 35, file: path)
        await reader.setCatchUpCommits(CatchUpCommits(interval: .seconds(3_600), records: 20), clock: ManualCommitClock())
        // When page 4 arrives, page 3 is applied but not committed: the files then are what a
        // crash would leave.
        await reader.setApplyHook(StageCounter { stage, count in
            guard stage == .received && count == 4 else { return }
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.copyItem(atPath: path + suffix, toPath: crashed + suffix)
            }
        }.hook)
        _ = try await reader.sync()
        await reader.close()
        let revived = SyncClient(store: try Store(.file(path: crashed), schema: world.schema), transport: transport, batchSize: 10)
        #expect(await revived.inspect { $0.maxRevision } == 20)
        #expect(try await revived.inspect { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(20))
        _ = try await revived.sync()
        #expect(try await world.contents(revived) == world.serverContents())
        await revived.close()
    }

    @Test func anAppWriteDuringTheCatchUp_commitsThePagesBeforeIt_andOutlivesALaterFailure() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        await reader.setCatchUpCommits(Self.never, clock: ManualCommitClock())
        // While page 2 is on its way (page 1 applied, not committed), the app writes; page 2
        // then fails half-written.
        await transport.before(2) { [weak reader] in
            _ = try await reader?.write { try $0.insert("lists", values: ["late"]) }
        }
        await reader.setApplyHook(StageCounter { stage, count in if stage == .written && count == 2 { throw CatchUpCrash() } }.hook)
        let heard = await reader.listen()
        await #expect(throws: SyncError.self) { _ = try await reader.sync() }
        #expect(heard.changes.map(\.origin) == [.sync, .local])
        #expect(inserted(heard.changes) == [10, 1])
        #expect(await reader.inspect { $0.maxRevision } == 10)
        #expect(try await reader.inspect { try $0.pendingChanges().count } == 1)
        await reader.setApplyHook(nil)
        _ = try await reader.sync()
        #expect(try await world.serverContents().contains { $0.contains("late") })
        #expect(try await world.contents(reader) == world.serverContents())
    }

    /// A local edit made before the catch-up and one made between its pages merge with the
    /// pages as they do with a commit per page.
    @Test func localEditsMergeAsWithACommitPerPage() async throws {
        func run(_ commits: CatchUpCommits) async throws -> (reader: [String], server: [String]) {
            let (world, reader, transport) = try await catchUpWorld(lists: 10)
            _ = try await reader.sync()
            let writer = world.clients[0]
            for id in 1...10 {
                _ = try await writer.withStore { try $0.update("lists", id: Int64(id), ["name": .text("theirs \(id)")]) }
                _ = try await writer.sync()
            }
            await reader.setCatchUpCommits(commits, clock: ManualCommitClock())
            try await reader.write { _ = try $0.update("lists", id: 3, ["name": "mine 3"]) }
            // While the second page (revisions 11 to 20 hold the ten updates) is on its way.
            await transport.before(3) { [weak reader] in
                try await reader?.write { _ = try $0.update("lists", id: 8, ["name": "mine 8"]) }
            }
            await reader.setBatchSize(5)
            _ = try await reader.sync()
            _ = try await reader.sync()
            return (try await world.contents(reader), try await world.serverContents())
        }
        let held = try await run(Self.never)
        let perPage = try await run(CatchUpCommits(interval: .zero, records: 1))
        #expect(held.reader == held.server)
        #expect(held == perPage)
        #expect(held.server.contains { $0.contains("mine 3") } && held.server.contains { $0.contains("mine 8") })
    }
}

extension SyncClient {
    func setBatchSize(_ size: Int) { batchSize = size }
}
