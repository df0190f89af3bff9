import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation

/// A note as the app stores it.
struct Note: StoredRecord, Equatable {
    var id: Int64 = 0
    var title = ""
    var likes: Int64 = 0

    static let table = RecordTable<Note>("notes", [
        .text("title", \.title),
        .integer("likes", \.likes, strategy: .counter),
    ])
}

/// A device offline: it writes a note under a temporary id, tries to sync with a server
/// that does not answer, and keeps the note and its pending change across a restart.
/// `device-app URL` syncs with a running server instead (`fieldmerge-server serve`).
/// Exits with code 1 on anything unexpected.
@main struct DeviceApp {
    static func main() async {
        do {
            let failures = try await run(url: CommandLine.arguments.dropFirst().first)
            if failures.isEmpty {
                print("device-app: ok")
                exit(0)
            }
            print("device-app: FAILED: \(failures.joined(separator: "; "))")
        } catch {
            print("device-app: FAILED: \(error)")
        }
        exit(1)
    }

    static func run(url: String?) async throws -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("device-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let schema = try Schema([Note.table.entity])
        let file = folder.appendingPathComponent("device.sqlite").path
        // Port 1 on loopback: nothing listens, as for a device in a tunnel.
        let server = URL(string: url ?? "http://127.0.0.1:1/sync")!
        var failures: [String] = []

        var client = SyncClient(store: try Store(.file(path: file), schema: schema), transport: HTTPTransport(url: server))
        let created = try await client.write { store in
            var note = Note(title: "Buy milk")
            try store.insert(&note)
            return note
        }
        if created.id >= 0 { failures.append("a note made offline has a temporary (negative) id, not \(created.id)") }
        do {
            let summary = try await client.sync()
            if url == nil { failures.append("a sync with nobody listening succeeded: \(summary)") }
        } catch {
            if url != nil { failures.append("sync with \(server): \(error)") }
            if url == nil, error.code != .unreachable || !error.isRetryable {
                failures.append("an unanswered sync is \(error.code), retryable \(error.isRetryable); expected unreachable, retryable")
            }
        }
        await client.close()

        // The app restarts: the note and, offline, its pending change are still there.
        client = SyncClient(store: try Store(.file(path: file), schema: schema), transport: HTTPTransport(url: server))
        let (notes, pending) = try await client.write { store in
            (try store.fetchAll(Note.self), try store.pendingChanges().count)
        }
        await client.close()
        if notes.map(\.title) != ["Buy milk"] { failures.append("after a restart the device holds \(notes)") }
        if url == nil, pending != 1 { failures.append("the unsent note has \(pending) pending changes, not 1") }
        if url != nil, pending != 0 || notes.first.map({ $0.id > 0 }) != true {
            failures.append("after a sync the note has id \(notes.first?.id ?? 0) and \(pending) pending changes")
        }
        print("device-app: \(notes.count) note(s), id \(notes.first?.id ?? 0), \(pending) pending change(s)")
        return failures
    }
}
