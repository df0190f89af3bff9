import FieldMerge

/// The request with change sets a client sent and whose answer it has not applied yet
/// (Specs/store.md, "A request in flight"): the exact bytes, so that the next sync sends
/// them again, the server recognises the retry by its id and answers it once.
package struct InFlightRequest: Sendable, Equatable {
    /// The bytes sent (gzip'd when ``gzip``).
    package var body: [UInt8]
    package var gzip: Bool
    /// The schema fingerprint the body was written with.
    package var fingerprint: String

    package init(body: [UInt8], gzip: Bool, fingerprint: String) {
        self.body = body
        self.gzip = gzip
        self.fingerprint = fingerprint
    }
}

extension Store {
    /// The request in flight, if the last one with change sets was never answered.
    package func inFlightRequest() throws(StoreError) -> InFlightRequest? {
        let value = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT \"value\" FROM \"__fm_state\" WHERE \"key\" = 'inFlight'")
        }
        guard case .blob(let bytes)? = value else { return nil }
        guard bytes.count >= 2, bytes.count >= 2 + Int(bytes[1]) else {
            throw StoreError(.corrupt, "the request in flight is damaged")
        }
        let end = 2 + Int(bytes[1])
        return InFlightRequest(
            body: Array(bytes[end...]), gzip: bytes[0] == 1, fingerprint: String(decoding: bytes[2..<end], as: UTF8.self))
    }

    /// Records `request` as in flight (one statement: it is there whole or not at all).
    package func recordInFlight(_ request: InFlightRequest) throws(StoreError) {
        let fingerprint = Array(request.fingerprint.utf8.prefix(255))
        let bytes = [request.gzip ? 1 : 0, UInt8(fingerprint.count)] + fingerprint + request.body
        try sqlite { () throws(SQLiteError) in
            try database.run("INSERT OR REPLACE INTO \"__fm_state\" (\"key\", \"value\") VALUES ('inFlight', ?)", [.blob(bytes)])
        }
    }

    /// Forgets the request in flight: its answer was applied (call it in that transaction),
    /// or the server refused it as a whole and changed nothing.
    package func clearInFlight() throws(StoreError) {
        try sqlite { () throws(SQLiteError) in
            try database.run("DELETE FROM \"__fm_state\" WHERE \"key\" = 'inFlight'")
        }
    }
}
