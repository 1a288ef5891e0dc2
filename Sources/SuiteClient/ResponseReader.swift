internal import Foundation

/// Parses an HTTP/1.1 response as its bytes arrive: the status line and headers, then the
/// body by `Content-Length`, by chunks, or up to the end of the connection; interim 1xx
/// answers are skipped.
///
/// Every byte is looked at a bounded number of times, whatever the peer sends: consumed
/// bytes are dropped by moving a start offset (not by shifting the buffer), header fields
/// are merged through a table keyed by their lowercased names, and a hostile peer meets
/// caps (``maxHeaderCount`` fields, ``maxInterimResponses`` 1xx answers, trailers within
/// the header size limit) instead of being read forever. The caller bounds the time.
struct ResponseReader {
    enum Step: Equatable {
        case more
        case failed(String)
        case done(status: Int, fields: [String: String], body: Data)
    }

    private enum Framing: Equatable {
        case length(Int)
        case chunked
        case untilClose
    }

    /// Header fields in one answer at most (libcurl and browsers accept about 100; the
    /// suite's server sends fewer than 20).
    static let maxHeaderCount = 200
    /// Interim (1xx) answers before the real one at most.
    static let maxInterimResponses = 16

    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    let noBody: Bool
    private var buffer: [UInt8] = []
    // The first unconsumed byte of `buffer`.
    private var start = 0
    private var status: Int?
    private var fields: [String: String] = [:]
    private var framing: Framing?
    private var body = Data()
    // Chunked: bytes left in the current chunk (nil: a size line is next); trailers after 0.
    private var chunkLeft: Int?
    private var inTrailers = false
    private var trailerBytes = 0
    private var interim = 0
    // Where the search for the end of the headers goes on (bytes before it were searched).
    private var headerScan = 0

    init(maxHeaderBytes: Int, maxBodyBytes: Int, noBody: Bool = false) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.noBody = noBody
    }

    private var pendingCount: Int { buffer.count - start }

    mutating func consume(_ bytes: ArraySlice<UInt8>) -> Step {
        // Drop what was consumed once it is most of the buffer: amortised linear.
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            headerScan = max(0, headerScan - start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
        return advance()
    }

    /// The connection ended: a body read to the end is complete; anything else was cut
    /// short (`.more`: the caller reports a broken connection, which Auth may retry).
    mutating func finish() -> Step {
        guard let status, framing == .untilClose else { return .more }
        body.append(contentsOf: buffer[start...])
        start = buffer.count
        guard body.count <= maxBodyBytes else { return tooLong() }
        return .done(status: status, fields: fields, body: body)
    }

    private func tooLong() -> Step { .failed("is longer than \(maxBodyBytes) bytes") }

    private mutating func advance() -> Step {
        while true {
            guard let status, let framing else {
                // Headers.
                guard let end = find(headerEnd: true, from: max(start, headerScan)) else {
                    headerScan = max(start, buffer.count - 3)
                    return pendingCount > maxHeaderBytes
                        ? .failed("has headers longer than \(maxHeaderBytes) bytes") : .more
                }
                guard end - start <= maxHeaderBytes else {
                    return .failed("has headers longer than \(maxHeaderBytes) bytes")
                }
                let text = String(decoding: buffer[start..<end], as: UTF8.self)
                start = end + 4
                headerScan = start
                if let failed = parseHead(text) { return failed }
                continue
            }
            switch framing {
            case .length(let length):
                guard pendingCount >= length else { return .more }
                body.append(contentsOf: buffer[start..<(start + length)])
                start += length
                return .done(status: status, fields: fields, body: body)
            case .untilClose:
                guard body.count + pendingCount <= maxBodyBytes else { return tooLong() }
                return .more
            case .chunked:
                if inTrailers {
                    guard let end = find(headerEnd: false, from: start) else {
                        return trailerBytes + pendingCount > maxHeaderBytes
                            ? .failed("has trailers longer than \(maxHeaderBytes) bytes") : .more
                    }
                    let length = end - start
                    start = end + 2
                    if length == 0 { return .done(status: status, fields: fields, body: body) }
                    trailerBytes += length + 2
                    guard trailerBytes <= maxHeaderBytes else {
                        return .failed("has trailers longer than \(maxHeaderBytes) bytes")
                    }
                    continue
                }
                if let left = chunkLeft {
                    guard pendingCount >= left + 2 else { return .more }
                    guard buffer[start + left] == 13, buffer[start + left + 1] == 10 else {
                        return .failed("has a malformed chunk")
                    }
                    body.append(contentsOf: buffer[start..<(start + left)])
                    start += left + 2
                    chunkLeft = nil
                    continue
                }
                guard let end = find(headerEnd: false, from: start) else {
                    return pendingCount > 1024 ? .failed("has a malformed chunk size") : .more
                }
                guard end - start <= 1024 else { return .failed("has a malformed chunk size") }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = end + 2
                let digits = line.split(separator: ";", maxSplits: 1).first.map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                guard let digits, !digits.isEmpty, digits.count <= 15,
                    let size = Int(digits, radix: 16), size >= 0
                else { return .failed("has a malformed chunk size '\(line.prefix(20))'") }
                guard body.count + size <= maxBodyBytes else { return tooLong() }
                if size == 0 { inTrailers = true } else { chunkLeft = size }
            }
        }
    }

    /// Reads the status line and headers; decides the framing. Nil when all is well.
    private mutating func parseHead(_ text: String) -> Step? {
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3,
            let code = Int(parts[1]), (100...599).contains(code)
        else { return .failed("has a malformed status line '\(statusLine.prefix(40))'") }
        guard lines.count <= Self.maxHeaderCount else {
            return .failed("has more than \(Self.maxHeaderCount) header fields")
        }
        // Lowercased name -> (name as first sent, value): merging is one table lookup.
        var merged: [String: (name: String, value: String)] = [:]
        merged.reserveCapacity(lines.count)
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line.first!.isWhitespace
            else { return .failed("has a malformed header line '\(line.prefix(40))'") }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            let key = name.lowercased()
            if let existing = merged[key] {
                merged[key] = (existing.name, existing.value + ", " + value)
            } else {
                merged[key] = (name, value)
            }
        }
        if (100..<200).contains(code) {
            // Interim: the real answer follows (a bounded number of them).
            interim += 1
            return interim > Self.maxInterimResponses
                ? .failed("has more than \(Self.maxInterimResponses) interim (1xx) answers") : nil
        }
        func field(_ name: String) -> String? { merged[name]?.value }
        if noBody || code == 204 || code == 304 {
            framing = .length(0)
        } else if let coding = field("transfer-encoding") {
            guard
                coding.lowercased().split(separator: ",").last?.trimmingCharacters(in: .whitespaces)
                    == "chunked"
            else { return .failed("has an unsupported Transfer-Encoding '\(coding.prefix(40))'") }
            framing = .chunked
        } else if let length = field("content-length") {
            guard let count = Int(length.trimmingCharacters(in: .whitespaces)), count >= 0 else {
                return .failed("has a malformed Content-Length '\(length.prefix(40))'")
            }
            guard count <= maxBodyBytes else { return tooLong() }
            framing = .length(count)
        } else {
            framing = .untilClose
        }
        status = code
        var named: [String: String] = [:]
        named.reserveCapacity(merged.count)
        for (name, value) in merged.values { named[name] = value }
        fields = named
        return nil
    }

    /// The index of the next `\r\n\r\n` (`headerEnd`) or `\r\n` at or after `from`.
    private func find(headerEnd: Bool, from: Int) -> Int? {
        let width = headerEnd ? 4 : 2
        guard buffer.count - from >= width else { return nil }
        return buffer.withUnsafeBufferPointer { bytes -> Int? in
            var index = from
            let last = bytes.count - width
            while index <= last {
                if bytes[index] == 13, bytes[index + 1] == 10,
                    !headerEnd || (bytes[index + 2] == 13 && bytes[index + 3] == 10)
                {
                    return index
                }
                index += 1
            }
            return nil
        }
    }
}
