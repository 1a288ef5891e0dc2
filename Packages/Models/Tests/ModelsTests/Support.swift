import Foundation
import Models
import Testing

/// A small deterministic generator (SplitMix64) so random-code tests repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum Fixture {
    static func data(_ name: String) throws -> Data {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Resources")
        )
        return try Data(contentsOf: url)
    }
}

/// Decodes `json` expecting a validation failure and returns the validation error.
func decodeFailure<T: Decodable>(_ type: T.Type, _ json: String) throws -> ValidationError {
    do {
        _ = try JSONDecoder.shopfloor.decode(T.self, from: Data(json.utf8))
    } catch {
        return try #require(ValidationError(error), "not a validation error: \(error)")
    }
    Issue.record("decoded without error: \(json)")
    throw CancellationError()
}

func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
    let data = try JSONEncoder.shopfloor.encode(value)
    return try JSONDecoder.shopfloor.decode(T.self, from: data)
}

func date(_ text: String) -> Date { try! RFC3339.date(from: text) }

let berlinStore = UUID(uuidString: "6F1C2B7A-9E0D-4C1B-8A55-2D4E6F708192")!
let sfStore = UUID(uuidString: "A0B1C2D3-E4F5-4A6B-8C7D-8E9FA0B1C2D3")!
