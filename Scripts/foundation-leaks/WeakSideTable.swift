// Not a leak, a blind spot of LeakSanitizer: the first weak reference to a Swift object
// allocates a side table (32 bytes) whose address the object keeps shifted inside its
// reference count word, where LeakSanitizer does not recognise a pointer. While the object
// lives, the side table is reported as a direct leak. Foundation's Process.run() keeps a
// weak reference to the thread's RunLoop, which lives until the process exits ("process"
// mode); pure Swift shows the same ("global" mode).
import Foundation

final class Box { var value = 1 }
let box = Box()  // lives until exit
let mode = CommandLine.arguments.dropFirst().first ?? "global"
switch mode {
case "global":
    weak var reference = box
    precondition(reference?.value == 1)
case "process":
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    try process.run()
    process.waitUntilExit()
default: fatalError("mode: global or process")
}
