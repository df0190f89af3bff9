#if canImport(Glibc)
import Glibc
#endif

/// How glibc's malloc keeps the memory a tool process frees (Specs/benchmarks.md, "A device
/// in 64 MB"). A 1,000,000-record download allocates and frees a page's buffers and decoded
/// records a hundred times over on several threads (URLSession's, the concurrency pool's,
/// the client's), and with glibc's defaults the process kept far more than it held at any
/// moment: 28 MB of heap at the peak, 90 MB resident.
public enum ProcessMemory {
    /// One arena for every thread: glibc gives each thread that finds the others' arenas
    /// busy one of its own (up to eight per core), and each keeps what was freed into it.
    static let arenas = 1
    /// Blocks from 256 KiB up come from `mmap` and go back to the system when freed. glibc
    /// raises this threshold by itself up to 32 MiB once such a block is freed, after which
    /// a page's buffers come from the heap and leave holes it keeps.
    static let mmapThresholdBytes = 256 * 1024

    /// Sets both; call it first, before other threads allocate. Nothing on other
    /// platforms, or where the C library has no `mallopt`. For measuring what this changes,
    /// `FIELDMERGE_MALLOC=default` in the environment leaves glibc's defaults and
    /// `FIELDMERGE_MALLOC=arenas` sets only the arenas.
    public static func limit() {
        #if canImport(Glibc)
        let choice = getenv("FIELDMERGE_MALLOC").map { String(cString: $0) }
        if choice == "default" { return }
        // `mallopt` is not in Swift's Glibc module; it is looked up in the C library.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let arenaMax: Int32 = -8  // M_ARENA_MAX in <malloc.h>
        let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        _ = mallopt(arenaMax, Int32(arenas))
        if choice == "arenas" { return }
        _ = mallopt(mmapThreshold, Int32(mmapThresholdBytes))
        #endif
    }
}
