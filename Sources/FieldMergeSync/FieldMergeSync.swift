import FieldMerge
import FieldMergeSQLite

/// The revision protocol of the objc.io case study (see `Specs/protocol.md`, to come):
/// wire codec, server logic, client and transports.
public enum FieldMergeSync {
    /// The protocol version this module speaks.
    public static let protocolVersion = 1
}
