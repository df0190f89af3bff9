/// The revision protocol of the objc.io case study, as FieldMerge speaks it: the wire model,
/// its JSON codec, gzip, and the transport that carries bytes. Normative text:
/// `Specs/protocol.md`.
///
/// This module depends only on the merge core, so a device (``SyncTransport`` clients) and
/// a server link the same definition of the bytes and nothing of each other.
public enum WireProtocol {
    /// The protocol version this module speaks, sent with every request.
    public static let version = 1
}
