import FieldMergeProtocol
import FieldMergeSQLite

extension SyncClient {
    /// What the device holds of the server's scopes, as the last applied response said: sent
    /// with every request (Specs/store.md, "Leaving a scope"); nil when the server has none.
    ///
    /// - Throws: ``StoreError/Code/corrupt`` when the store's text of them cannot be read.
    func holdings() throws(StoreError) -> ScopeHoldings? {
        guard let text = store.scopeState else { return nil }
        guard let holdings = ScopeHoldings(storedText: text) else {
            throw StoreError(.corrupt, "the store's scope holdings are damaged: '\(text)'")
        }
        return holdings
    }
}
