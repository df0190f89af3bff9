import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation

/// Field notes: two inspectors, Ana and Ben, keep notes on the sites they visit, each on a
/// device of their own with its own SQLite file, synced through a server in this process.
/// Everything goes through the typed API: `Note` records, `write` blocks, live queries.
/// Prints what each screen shows, checks it, and exits with code 1 on anything unexpected.
@main struct FieldNotes {
    static func main() async {
        do {
            let outcome = try await run()
            if outcome.failures.isEmpty {
                print("field-notes: ok")
                exit(0)
            }
            print("field-notes: FAILED: \(outcome.failures.joined(separator: "; "))")
        } catch {
            print("field-notes: FAILED: \(error)")
        }
        exit(1)
    }

    static func run() async throws -> Outcome {
        var outcome = Outcome()

        // README block begin
        let folder = URL.temporaryDirectory.appending(path: "field-notes-\(UUID())")   // an app: its support folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let schema = try Schema([Note.table.entity])
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))  // an app: HTTPTransport(url:)
        let store = try Store(.file(path: folder.appending(path: "ana.sqlite").path), schema: schema)
        let ana = SyncClient(store: store, transport: server)
        // README block end
        defer { try? FileManager.default.removeItem(at: folder) }

        // README block begin
        let openNotes = try await ana.observe(Note.all.filter(\.status == .open).order(\.site),
                                              bufferingPolicy: .bufferingNewest(1))   // a screen needs the newest only
        var anasScreen = openNotes.makeAsyncIterator()       // SwiftUI: LiveQuery(openNotes).rows
        let atStart = try await anasScreen.next()            // []: nothing yet
        // README block end
        outcome.expect(atStart.map(sites), [], "Ana's open notes at the start")

        // README block begin
        try await ana.write { store in                       // one transaction: a throw leaves nothing
            var pump = Note(site: "Pump 3", text: "Leaking at the flange.\nPressure 4 bar.\nParts ordered.", photos: 1)
            try store.insert(&pump)                          // a temporary id (-1) until the server assigns one
            var gate = Note(site: "Gate B", text: "Hinge loose.")
            try store.insert(&gate)
        }
        let afterWrite = try await anasScreen.next()         // [Gate B, Pump 3]: the write refreshed the query
        // README block end
        outcome.expect(afterWrite.map(sites), ["Gate B", "Pump 3"], "Ana's open notes after her write")
        outcome.expect(afterWrite?.allSatisfy { $0.id < 0 }, true, "new notes have temporary ids before the sync")

        // README block begin
        var summary = SyncSummary()
        do {
            summary = try await ana.sync()                   // both notes go up; the server assigns their ids
        } catch {                                            // a SyncError
            guard error.isRetryable else { throw error }     // retryable: offline; the notes stay queued
        }
        let afterSync = try await anasScreen.next()          // the same notes under their server ids
        let state = await ana.state                          // state.unsynced.total: 0; SwiftUI: LiveSyncState(ana)
        // README block end
        outcome.expect(summary.sent, 2, "notes Ana's sync sent")
        outcome.expect(afterSync?.map(\.id).sorted(), [1, 2], "Ana's notes after her sync: the server's ids")
        outcome.expect(state.unsynced.total, 0, "Ana's changes not yet on the server")

        // Ben's device catches up: his own live query hears the sync.
        let ben = SyncClient(store: try Store(.file(path: folder.appending(path: "ben.sqlite").path), schema: schema),
                             transport: server)
        var bensScreen = try await ben.observe(Note.all.filter(\.status == .open).order(\.site),
                                               bufferingPolicy: .bufferingNewest(1)).makeAsyncIterator()
        let bensStart = try await bensScreen.next()
        _ = try await ben.sync()
        let bensAfterSync = try await bensScreen.next()
        outcome.expect(bensStart.map(sites), [], "Ben's open notes before his first sync")
        outcome.expect(bensAfterSync.map(sites), ["Gate B", "Pump 3"], "Ben's open notes after his first sync")

        // Offline, both edit Pump 3. Ana rewrites the first line and adds a photo; Ben adds a
        // line at the end and two photos, and resolves Gate B.
        try await ana.write { store in
            guard var pump = try store.fetchOne(Note.all.filter(\.site == "Pump 3")) else { throw ExampleError("Ana has no Pump 3") }
            pump.text = "Leaking at the flange, two drops a second.\nPressure 4 bar.\nParts ordered."
            pump.photos += 1
            _ = try store.save(pump)
        }
        try await ben.write { store in
            guard var pump = try store.fetchOne(Note.all.filter(\.site == "Pump 3")),
                  var gate = try store.fetchOne(Note.all.filter(\.site == "Gate B"))
            else { throw ExampleError("Ben lacks a note") }
            pump.text += "\nValve replaced."
            pump.photos += 2
            _ = try store.save(pump)
            gate.status = .resolved
            _ = try store.save(gate)
        }
        let bensAfterEdit = try await bensScreen.next()
        outcome.expect(bensAfterEdit.map(sites), ["Pump 3"], "Ben's open notes after he resolved Gate B")

        // Back online: Ana, then Ben (whose client merges Pump 3), then Ana again.
        _ = try await ana.sync()
        let bens = try await ben.sync()
        _ = try await ana.sync()
        print("Ben's sync decided \(bens.conflicts.count) conflicts:")
        for conflict in bens.conflicts { print("  \(conflict.field ?? "-"): \(conflict.strategy), \(conflict.winner)") }

        let anasNotes = try await notes(of: ana), bensNotes = try await notes(of: ben)
        outcome.expect(anasNotes == bensNotes, true, "both devices hold the same notes")
        let pump = anasNotes.first { $0.site == "Pump 3" }
        outcome.expect(pump?.text, "Leaking at the flange, two drops a second.\nPressure 4 bar.\nParts ordered.\nValve replaced.",
                       "Pump 3: Ana's first line and Ben's last, both kept")
        outcome.expect(pump?.photos, 4, "Pump 3: photos, 1 + 1 + 2")
        outcome.expect(anasNotes.first { $0.site == "Gate B" }?.status, .resolved, "Gate B: resolved by Ben")
        outcome.expect(bens.conflicts.map { "\($0.field ?? "-"):\($0.strategy)" }.sorted(),
                       ["photos:counter", "text:text"], "conflicts Ben's client decided")

        // Ana's live query heard each commit of her syncs and kept the newest result, what
        // her screen shows now: Gate B left it when Ben's resolution arrived.
        let anasLast = try await anasScreen.next()
        outcome.expect(anasLast.map(sites), ["Pump 3"], "Ana's open notes after the last sync")
        let anasState = await ana.state, bensState = await ben.state
        outcome.expect(anasState.unsynced.total + bensState.unsynced.total, 0, "changes left unsynced")

        await ana.close()
        await ben.close()
        return outcome
    }

    /// The sites of `notes`, in order.
    static func sites(_ notes: [Note]) -> [String] { notes.map(\.site) }

    /// Every note of a device, by site.
    static func notes(of client: SyncClient) async throws -> [Note] {
        try await client.read { try $0.fetchAll(Note.all.order(\.site)) }
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
