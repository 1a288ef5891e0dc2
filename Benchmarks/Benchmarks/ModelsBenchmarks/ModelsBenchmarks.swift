import Benchmark
import Foundation
import Models

// JSON encode and decode of 10,000 reservations through the suite's coders (validating,
// RFC 3339 instants, confirmation codes, UUIDs), against the baseline a user would write
// without Models: a plain Codable struct of the same fields through Foundation's coders
// with `.iso8601` dates and no validation. Throughput is reservations per second.

private let count = 10_000

private func makeReservations() -> [Reservation] {
    var generator = SystemRandomNumberGenerator()
    let store = UUID()
    let start = Date(timeIntervalSince1970: 1_790_000_000)
    return (0..<count).map { i in
        let startsAt = start.addingTimeInterval(Double(i) * 900)
        return try! Reservation(
            confirmationCode: .random(using: &generator),
            status: Reservation.Status.allCases[i % Reservation.Status.allCases.count],
            startsAt: startsAt,
            endsAt: startsAt.addingTimeInterval(1_800),
            storeID: store,
            customerID: UUID(),
            partySize: 1 + i % 4,
            topic: "Setup of a new device #\(i)",
            notes: i % 3 == 0 ? "Bring the receipt" : nil
        )
    }
}

/// The same fields as a plain Codable struct: what Foundation gives with no domain types.
private struct PlainReservation: Codable {
    var id: UUID
    var confirmationCode: String
    var version: Int
    var status: String
    var startsAt: Date
    var endsAt: Date
    var storeID: UUID
    var customerID: UUID
    var partySize: Int
    var topic: String
    var notes: String?

    init(_ r: Reservation) {
        id = r.id
        confirmationCode = r.confirmationCode.description
        version = r.version
        status = r.status.rawValue
        startsAt = r.startsAt
        endsAt = r.endsAt
        storeID = r.storeID
        customerID = r.customerID
        partySize = r.partySize
        topic = r.topic
        notes = r.notes
    }
}

private func plainEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    encoder.outputFormatting = [.sortedKeys]
    return encoder
}

private func plainDecoder() -> JSONDecoder {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        scalingFactor: .one,
        maxDuration: .seconds(5),
        maxIterations: 30,
        // More than 10% worse at p90 than Benchmarks/Thresholds fails `make bench`.
        thresholds: [
            .wallClock: .init(relative: [.p90: 10]),
            .mallocCountTotal: .init(relative: [.p90: 10]),
        ]
    )

    let reservations = makeReservations()
    let plain = reservations.map(PlainReservation.init)
    let encoded = try! ModelsJSON.makeEncoder().encode(reservations)
    let plainEncoded = try! plainEncoder().encode(plain)

    // One iteration handles all 10,000 reservations: throughput x 10,000 = reservations/s,
    // allocations are per batch of 10,000.
    Benchmark("Models: encode 10,000 reservations") { benchmark in
        let encoder = ModelsJSON.makeEncoder()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(reservations))
        }
    }
    Benchmark("Models: decode 10,000 reservations") { benchmark in
        let decoder = ModelsJSON.makeDecoder()
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode([Reservation].self, from: encoded))
        }
    }
    Benchmark("Foundation baseline: encode 10,000 plain structs") { benchmark in
        let encoder = plainEncoder()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(plain))
        }
    }
    Benchmark("Foundation baseline: decode 10,000 plain structs") { benchmark in
        let decoder = plainDecoder()
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode([PlainReservation].self, from: plainEncoded))
        }
    }
}
