/// A benchmark's set-up found a wrong result: the figures would not mean anything.
public struct DigestMismatch: Error, CustomStringConvertible {
    public var step: String
    public var records: Int

    public init(step: String, records: Int) {
        self.step = step
        self.records = records
    }

    public var description: String { "\(step) of \(records) records does not match the reference result" }
}
