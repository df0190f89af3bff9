#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The targets one harness binary fuzzes; `FIELDMERGE_FUZZ_TARGET` picks one per process
/// (`Fuzz/run` sets it). Specs/reliability.md describes each target and its checks.
enum FuzzTarget: String, CaseIterable {
    case request, response, gzip, schema, merge, linemerge, live, dataset

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .request: fuzzWireRequest(bytes)
        case .response: fuzzWireResponse(bytes)
        case .gzip: fuzzGzip(bytes)
        case .schema: fuzzSchemaDocument(bytes)
        case .merge: fuzzMergeDocument(bytes)
        case .linemerge: fuzzLineMerge(bytes)
        case .live: fuzzLiveEvents(bytes)
        case .dataset: fuzzDataSetLine(bytes)
        }
    }

    static let selected: FuzzTarget = {
        let names = allCases.map(\.rawValue).joined(separator: ", ")
        guard let raw = getenv("FIELDMERGE_FUZZ_TARGET") else {
            fatalError("set FIELDMERGE_FUZZ_TARGET to one of: \(names)")
        }
        guard let target = FuzzTarget(rawValue: String(cString: raw)) else {
            fatalError("unknown FIELDMERGE_FUZZ_TARGET '\(String(cString: raw))'; expected one of: \(names)")
        }
        return target
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.selected.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// A property the target checks: its failure is a crash libFuzzer saves as a reproducer.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz property failed: \(message())") }
}
