import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import Synchronization
import Testing

/// A download from revision 0 runs with a small page cache (`SyncClient.downloadPageCacheKiB`),
/// and the store's own size comes back when the sync ends; an incremental sync keeps the
/// store's. 25 lists on the server, pages of 10.
@Suite struct DownloadPageCacheTests {
    /// The store's page cache in KiB as the client's store has it just before request `call`
    /// of the sync that runs next (read between two pages, inside the sync).
    func cacheBefore(_ call: Int, of reader: SyncClient, _ transport: StagedTransport) async -> SeenCache {
        let seen = SeenCache()
        await transport.before(call) { [weak reader] in
            let kib = try await reader?.withStore { try $0.database.pageCacheKiB }
            seen.kib.withLock { $0 = kib }
        }
        return seen
    }

    @Test func aDownloadFromRevisionZero_usesTheSmallCache_untilTheSyncEnds() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        let own = try await reader.withStore { try $0.database.pageCacheKiB }
        #expect(own == 32_768)
        let during = await cacheBefore(2, of: reader, transport)
        _ = try await reader.sync()
        #expect(during.kib.withLock { $0 } == 2_048)
        #expect(try await reader.withStore { try $0.database.pageCacheKiB } == own)
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func anIncrementalSync_keepsTheStoresCache() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        _ = try await reader.sync()
        let writer = world.clients[0]
        for n in 0..<15 { _ = try await writer.withStore { try $0.insert("lists", values: [.text("later \(n)")]) } }
        _ = try await writer.sync()
        let calls = await transport.calls
        let during = await cacheBefore(calls + 2, of: reader, transport)
        let summary = try await reader.sync()
        #expect(summary.received == 15 && summary.rounds == 2)
        #expect(during.kib.withLock { $0 } == 32_768)
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func nil_keepsTheStoresCache_duringADownload() async throws {
        let (world, reader, transport) = try await catchUpWorld()
        await reader.setDownloadPageCache(nil)
        let during = await cacheBefore(2, of: reader, transport)
        _ = try await reader.sync()
        #expect(during.kib.withLock { $0 } == 32_768)
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func aSyncThatFails_stillPutsTheStoresCacheBack() async throws {
        let (_, reader, transport) = try await catchUpWorld()
        await transport.fail(2)
        await #expect(throws: SyncError.self) { _ = try await reader.sync() }
        #expect(try await reader.withStore { try $0.database.pageCacheKiB } == 32_768)
    }
}

/// The page cache size a test read during a sync.
final class SeenCache: Sendable {
    let kib = Mutex<Int?>(nil)
}
