import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// HTTP/1.1 by hand over a TCP socket, to see the exact bytes (no client decompresses or
/// fixes anything) and to misbehave on purpose.
///
/// The socket calls block, so each exchange runs on a thread of its own, never on the
/// cooperative pool the server's handlers also need.
enum RawHTTP {
    struct Response: Sendable {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends one request with `Connection: close` and reads the whole response.
    static func exchange(
        port: Int, method: String = "POST", path: String = "/sync", headers: [String: String] = [:], body: [UInt8] = []
    ) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + body
        let raw = try await onThread {
            let socket = try connect(port: port)
            defer { close(socket) }
            try send(socket, bytes)
            return try readToEnd(socket)
        }
        return try parse(raw, head: method == "HEAD")
    }

    /// Sends `bytes` as they are (a request of any shape) and reads the whole response.
    static func exchange(port: Int, raw bytes: [UInt8]) async throws -> Response {
        let raw = try await onThread {
            let socket = try connect(port: port)
            defer { close(socket) }
            try send(socket, bytes)
            return try readToEnd(socket)
        }
        return try parse(raw)
    }

    /// Sends `bytes` and closes the connection without reading anything.
    static func sendAndClose(port: Int, _ bytes: [UInt8]) async throws {
        try await onThread {
            let socket = try connect(port: port)
            defer { close(socket) }
            try send(socket, bytes)
        }
    }

    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    static func connect(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)  // a hung server fails the test instead of hanging it
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(socket)
            throw Failure(description: "connect: errno \(errno)")
        }
        return socket
    }

    static func send(_ socket: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += count
        }
    }

    static func readToEnd(_ socket: Int32) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { return result }
            guard count > 0 else { throw Failure(description: "recv: errno \(errno)") }
            result += buffer[0..<count]
        }
    }

    /// Status line, headers, and a body of `Content-Length` bytes.
    static func parse(_ raw: [UInt8], head: Bool = false) throws -> Response {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = raw.indices.first(where: { raw[$0...].starts(with: separator) }) else {
            throw Failure(description: "no end of headers in \(raw.count) bytes")
        }
        let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(raw[(end + separator.count)...])
        if head {
            body = []
        } else if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { throw Failure(description: "body of \(body.count) bytes, expected \(length)") }
            body = Array(body[..<length])
        }
        return Response(status: status, headers: headers, body: body)
    }
}
