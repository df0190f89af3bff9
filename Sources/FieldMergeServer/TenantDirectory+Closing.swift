extension TenantDirectory {
    /// Nil when another server may be opened now; otherwise a closing to wait for before
    /// looking again: one under way, or that of the least recently used server no request
    /// holds, started here.
    ///
    /// - Throws: ``ServerError/Code/unavailable`` when every open server is held.
    func makeRoom() throws(ServerError) -> Task<Void, Never>? {
        guard occupied >= limits.maxOpen else { return nil }
        if let underWay = closing.values.first { return underWay }
        let idle = entries.filter { $0.value.leases == 0 }.min { $0.value.lastUsed < $1.value.lastUsed }
        guard let tenant = idle?.key else {
            counters.refusedBusy += 1
            publish()
            throw ServerError(
                .unavailable,
                "all \(limits.maxOpen) tenants this server keeps open are in use by requests in flight; try again shortly")
        }
        counters.evicted += 1
        return startClosing(tenant)
    }

    /// Closes `tenant`'s server, which no request holds, in a task of its own; requests for
    /// the tenant wait for it before opening the tenant again.
    @discardableResult
    func startClosing(_ tenant: String) -> Task<Void, Never> {
        guard let entry = entries.removeValue(forKey: tenant) else { return Task {} }
        precondition(entry.leases == 0, "a tenant's server is closed while a request holds it")
        let task = Task {
            await entry.server.close()
            closing[tenant] = nil
            publish()
        }
        closing[tenant] = task
        publish()
        return task
    }

    /// Starts the task that closes idle servers, once (none without ``Limits/idleTime``). It
    /// looks four times per idle time, so a server closes between one and 1.25 idle times
    /// after its last request; it ends with the directory.
    func startSweeping() {
        guard sweeper == nil, let idleTime = limits.idleTime else { return }
        let interval = idleTime / 4
        sweeper = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self else { return }
                await self.closeIdle()
            }
        }
    }

    /// Closes the servers no request has held for ``Limits/idleTime``.
    func closeIdle() {
        guard let idleTime = limits.idleTime else { return }
        let now = ContinuousClock.now
        for (tenant, entry) in entries where entry.leases == 0 && now - entry.lastUsed >= idleTime {
            counters.closedIdle += 1
            startClosing(tenant)
        }
    }

    /// Closes every server no request holds, and waits until they are closed (at shutdown,
    /// once requests have finished). A tenant used again later is opened again.
    public func close() async {
        for (tenant, entry) in entries where entry.leases == 0 { startClosing(tenant) }
        while let task = closing.first?.value { await task.value }
    }
}
