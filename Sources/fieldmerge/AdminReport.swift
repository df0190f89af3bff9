import FieldMergeJSON
import FieldMergeServerSQLite
import Foundation

/// `fieldmerge admin stats` as text and as JSON.
enum AdminReport {
    static func records(_ stats: SQLiteDataSetStats) -> Int { stats.entities.reduce(0) { $0 + $1.records } }

    static func text(_ stats: SQLiteDataSetStats, devices limit: Int) -> String {
        var lines = [
            "schema version \(stats.schemaVersion), revision \(stats.revision)",
            "file \(stats.fileBytes) bytes (\(stats.freeBytes) free)",
            "log \(stats.logEntries) entries, \(stats.storedReplies) stored replies",
        ]
        let width = max(6, stats.entities.map(\.name.count).max() ?? 0)
        lines.append(pad("entity", width) + "  records  tombstones")
        for entity in stats.entities {
            lines.append(pad(entity.name, width) + "  " + left(entity.records, 7) + "  " + left(entity.tombstones, 10))
        }
        lines.append("devices: \(stats.devices.count)" + (stats.devices.count > limit ? ", the \(limit) most recently seen:" : ""))
        for device in stats.devices.prefix(limit) {
            lines.append("  \(device.client)  \(device.user.isEmpty ? "-" : device.user)  last seen \(time(device.lastSeen))")
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ stats: SQLiteDataSetStats) -> JSONValue {
        .object([
            "schemaVersion": .integer(Int64(stats.schemaVersion)),
            "revision": .integer(stats.revision),
            "entities": .array(stats.entities.map { entity in
                .object(["name": .string(entity.name), "records": .integer(Int64(entity.records)), "tombstones": .integer(Int64(entity.tombstones))])
            }),
            "logEntries": .integer(Int64(stats.logEntries)),
            "storedReplies": .integer(Int64(stats.storedReplies)),
            "devices": .array(stats.devices.map { device in
                .object(["client": .string(device.client), "user": .string(device.user), "lastSeen": .integer(device.lastSeen)])
            }),
            "fileBytes": .integer(stats.fileBytes),
            "freeBytes": .integer(stats.freeBytes),
        ])
    }

    /// Milliseconds since the epoch as an ISO 8601 time (UTC).
    static func time(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1_000))
    }

    private static func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
    private static func left(_ n: Int, _ width: Int) -> String {
        let text = String(n)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
