import ArgumentParser
import FieldMergeServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `fieldmerge serve`'s options for one data set per tenant (Specs/http.md, "Tenants").
struct ServeTenantOptions: ParsableArguments {
    @Option(help: "Serve one data set per tenant: a SQLite file <tenant>.sqlite in this existing folder, created by the tenant's first write; the tenant is the verified token's 'tenant' claim. Needs token authentication; instead of --db, not with --postgres.")
    var tenants: String?

    @Option(help: "With --tenants: the most tenants' files open at once; past it the least recently used idle one is closed, and when all are in use a request is answered 503 'unavailable' (default: (open-file limit - 64) / 8, from 1 to 256).")
    var tenantsMaxOpen: Int?

    @Option(help: "With --tenants: seconds a tenant's file stays open after its last request (default 60).")
    var tenantsIdle: Double?

    /// Checks the combinations with the other options of `serve`.
    func validate(db: String?, postgres: String?, seedRecords: Int, auth: ServeAuthOptions) throws {
        guard tenants != nil else {
            if tenantsMaxOpen != nil || tenantsIdle != nil { throw ValidationError("--tenants-max-open and --tenants-idle need --tenants DIR") }
            return
        }
        if postgres != nil {
            throw ValidationError(
                "--tenants keeps each tenant in a SQLite file of its own; a PostgreSQL schema per tenant is not supported: "
                    + "use --tenants DIR without --postgres, or one serve process per tenant with --postgres-schema")
        }
        if db != nil { throw ValidationError("give either --db FILE or --tenants DIR: with --tenants each tenant has its own file in DIR") }
        if auth.keySource == nil {
            throw ValidationError(
                "--tenants needs token authentication (--jwt-secret-file, --jwt-secret-env or --jwks): the tenant of a request is its verified token's 'tenant' claim")
        }
        if seedRecords > 0 { throw ValidationError("--seed-records fills one data set; it does not go with --tenants") }
        if let tenantsMaxOpen, tenantsMaxOpen < 1 { throw ValidationError("--tenants-max-open must be at least 1") }
        if let tenantsIdle, !(tenantsIdle > 0 && tenantsIdle <= 86_400 * 365) {
            throw ValidationError("--tenants-idle must be a number of seconds above 0")
        }
    }

    /// The directory's limits: the options given, or the defaults.
    var limits: TenantDirectory.Limits {
        TenantDirectory.Limits(
            maxOpen: tenantsMaxOpen ?? Self.defaultMaxOpen(openFileLimit: Self.openFileLimit()),
            idleTime: .milliseconds(Int64(((tenantsIdle ?? 60) * 1000).rounded(.up))))
    }

    /// A tenant's SQLite file holds about 5 file descriptors (the server's connection and
    /// its checkpointer's, each on the file, its log and its shared memory); 8 leaves room,
    /// and 64 are kept for connections and the process's own files.
    static func defaultMaxOpen(openFileLimit: Int) -> Int {
        min(256, max(1, (openFileLimit - 64) / 8))
    }

    /// The process's soft limit of open files (`ulimit -n`), 1,024 when it cannot be read.
    static func openFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        return Int(clamping: limit.rlim_cur)  // unlimited (all bits set) clamps to Int.max
    }
}
