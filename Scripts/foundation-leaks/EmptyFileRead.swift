// Data(contentsOf:) and FileManager.contents(atPath:) of an empty file leak 4,096 bytes
// each on Linux: swift-foundation's readBytesFromFile mallocs a 4 KB chunk when fstat says
// 0 bytes (/proc files), reads nothing, and readDataFromFile returns Data() for a length of
// 0 without freeing it. FileHandle.readToEnd() does not leak (the last mode, the control).
// The reads run on a thread that ends, so no stale pointer on a live stack hides the leak.
import Foundation

let url = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(getpid())")
try Data().write(to: url)
defer { try? FileManager.default.removeItem(at: url) }
let mode = CommandLine.arguments.dropFirst().first ?? "data"
func readOnce() throws -> Int {
    switch mode {
    case "data": return try Data(contentsOf: url).count
    case "filemanager": return FileManager.default.contents(atPath: url.path)?.count ?? -1
    case "filehandle":
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        return try handle.readToEnd()?.count ?? 0
    default: fatalError("mode: data, filemanager or filehandle")
    }
}
let thread = Thread { for _ in 0..<10 { precondition(try! readOnce() == 0) } }
thread.start()
while !thread.isFinished { usleep(10_000) }
