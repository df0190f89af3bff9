import Foundation

/// A fresh folder under the system's temporary directory, removed with its contents when
/// the last reference goes.
public final class TemporaryFolder: Sendable {
    public let path: String

    public init(_ prefix: String = "fieldmerge-benchmark") throws {
        path = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
