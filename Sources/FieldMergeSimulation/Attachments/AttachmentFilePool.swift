import FieldMergeWorkload
import Foundation

/// The files devices attach in an attachment run: `count` files of random bytes in a folder,
/// the first of the smallest size, the second of the largest, the others spread evenly on a
/// logarithmic scale between them. Written once, in chunks; read by the devices' attaches.
struct AttachmentFilePool {
    let paths: [String]
    let sizes: [Int64]

    init(folder: String, count: Int, minBytes: Int, maxBytes: Int, random: inout SplitMix64) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var paths: [String] = [], sizes: [Int64] = []
        let (low, high) = (log(Double(minBytes)), log(Double(maxBytes)))
        for index in 0..<count {
            let size: Int
            switch index {
            case 0: size = minBytes
            case 1: size = maxBytes
            default: size = Int(exp(low + (high - low) * Double(random.next() >> 11) / Double(1 << 53)))
            }
            let path = "\(folder)/file-\(index)"
            try Self.write(size: size, seed: random.next(), to: path)
            paths.append(path)
            sizes.append(Int64(size))
        }
        (self.paths, self.sizes) = (paths, sizes)
    }

    /// Writes `size` bytes of xorshift noise from `seed` (they do not compress, as photos).
    private static func write(size: Int, seed: UInt64, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw SimulationError("cannot create \(path)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var state = seed | 1
        var left = size
        while left > 0 {
            let count = min(left, 1 << 20)
            var chunk = [UInt8](repeating: 0, count: (count + 7) & ~7)
            chunk.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for index in words.indices {
                    state ^= state << 13
                    state ^= state >> 7
                    state ^= state << 17
                    words[index] = state
                }
            }
            try handle.write(contentsOf: chunk[0..<count])
            left -= count
        }
    }
}
