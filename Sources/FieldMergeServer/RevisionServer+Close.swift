extension RevisionServer {
    /// Closes the storage: its connections and files are released (SQLite: the statements,
    /// the connection and the checkpointer's, so the write-ahead log is moved into the file
    /// and removed). The server answers nothing after it; every request then fails with
    /// ``ServerError/Code/storage``.
    ///
    /// Call it once no request is in flight (``TenantDirectory`` closes a tenant's server
    /// only when no request holds it). Its live subscriptions end first. Closing twice does
    /// nothing more.
    public func close() async {
        live.finishAll()
        await storage.close()
    }
}
