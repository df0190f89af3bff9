import FieldMergeServer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lines of a file (or of standard input), one at a time, without their newlines.
final class LineReader {
    /// The file's name in messages.
    let name: String
    /// The number of the line read last (from 1).
    private(set) var number = 0
    private let file: UnsafeMutablePointer<FILE>
    private let owned: Bool
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0

    /// Standard input for "-".
    init(path: String) throws(AdminTransferError) {
        if path == "-" {
            (name, file, owned) = ("standard input", fdopen(0, "r"), false)
        } else {
            guard let opened = fopen(path, "r") else { throw AdminTransferError("cannot read \(path): \(String(cString: strerror(errno)))") }
            (name, file, owned) = (path, opened, true)
        }
    }

    deinit {
        free(buffer)
        if owned { fclose(file) }
    }

    /// The next line that is not empty; nil at the end of the file.
    func next() throws(DataSetTransferError) -> Data? {
        while true {
            let count = getline(&buffer, &capacity, file)
            guard count >= 0 else {
                if ferror(file) != 0 { throw DataSetTransferError("cannot read \(name): \(String(cString: strerror(errno)))") }
                return nil
            }
            number += 1
            var length = count
            while length > 0, buffer![length - 1] == 0x0A || buffer![length - 1] == 0x0D { length -= 1 }
            if length == 0 { continue }
            return Data(bytes: buffer!, count: length)
        }
    }
}

/// Lines written to a new file (or standard output), buffered.
final class LineWriter {
    let name: String
    private let file: UnsafeMutablePointer<FILE>
    private let owned: Bool

    /// Standard output for nil; a file that must not exist yet otherwise.
    init(path: String?) throws(AdminTransferError) {
        guard let path else {
            (name, file, owned) = ("standard output", fdopen(1, "w"), false)
            return
        }
        guard let opened = fopen(path, "wx") else {
            throw AdminTransferError("cannot make \(path): \(String(cString: strerror(errno)))\(errno == EEXIST ? " (an export never overwrites a file)" : "")")
        }
        (name, file, owned) = (path, opened, true)
    }

    func write(_ line: String) throws(DataSetTransferError) {
        var line = line
        line.append("\n")
        let written = line.withUTF8 { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == line.utf8.count else { throw DataSetTransferError("cannot write \(name): \(String(cString: strerror(errno)))") }
    }

    /// Flushes and closes; a file that could not be written whole is an error.
    func finish() throws(DataSetTransferError) {
        let flushed = fflush(file) == 0
        let closed = owned ? fclose(file) == 0 : true
        guard flushed && closed else { throw DataSetTransferError("cannot write \(name): \(String(cString: strerror(errno)))") }
    }
}
