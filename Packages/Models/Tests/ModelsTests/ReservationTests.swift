import Foundation
import Models
import Testing

typealias Status = Reservation.Status

@Suite("Reservations and their lifecycle")
struct ReservationTests {
    static let start = date("2026-12-01T09:00:00Z")

    static func make(status: Status = .requested, partySize: Int = 2) throws -> Reservation {
        try Reservation(
            confirmationCode: ConfirmationCode("FK6S-Y95A"),
            status: status,
            startsAt: start,
            endsAt: start.addingTimeInterval(1800),
            storeID: berlinStore,
            customerID: UUID(),
            partySize: partySize,
            topic: "Suit fitting"
        )
    }

    static let legal: [(Status, Status)] = [
        (.requested, .confirmed), (.requested, .cancelled), (.confirmed, .checkedIn),
        (.confirmed, .cancelled),
        (.confirmed, .noShow), (.checkedIn, .completed),
    ]

    @Test("legal transitions move the status and bump the version", arguments: legal)
    func legalTransitions(from: Status, to: Status) throws {
        var reservation = try Self.make(status: from)
        try reservation.transition(to: to)
        #expect(reservation.status == to)
        #expect(reservation.version == 2)
    }

    static var illegal: [(Status, Status)] {
        Status.allCases.flatMap { from in Status.allCases.map { (from, $0) } }
            .filter { pair in !legal.contains { $0 == pair } }
    }

    @Test("every other transition is a typed error naming both states", arguments: illegal)
    func illegalTransitions(from: Status, to: Status) throws {
        var reservation = try Self.make(status: from)
        #expect(throws: Status.TransitionError(from: from, to: to)) {
            try reservation.transition(to: to)
        }
        #expect(reservation.status == from)
        #expect(reservation.version == 1)
        let message = Status.TransitionError(from: from, to: to).description
        #expect(message.contains(from.rawValue) && message.contains(to.rawValue))
    }

    @Test("terminal states are exactly completed, cancelled and noShow")
    func terminal() {
        #expect(Set(Status.allCases.filter(\.isTerminal)) == [.completed, .cancelled, .noShow])
        #expect(
            Status.TransitionError(from: .completed, to: .cancelled).description.contains("final")
        )
    }

    @Test("a full lifecycle counts versions")
    func lifecycle() throws {
        var reservation = try Self.make()
        for next in [Status.confirmed, .checkedIn, .completed] {
            try reservation.transition(to: next)
        }
        #expect(reservation.version == 4)
        #expect(reservation.status.isTerminal)
    }

    @Test("status raw values are the wire values")
    func rawValues() {
        #expect(
            Status.allCases.map(\.rawValue) == [
                "requested", "confirmed", "checkedIn", "completed", "cancelled", "noShow",
            ]
        )
    }

    @Test(
        "reservation rules name the field",
        arguments: [
            (0, 1800.0, "Fitting", nil as String?, "partySize", ValidationError.Code.outOfRange),
            (51, 1800, "Fitting", nil, "partySize", .outOfRange),
            (-1, 1800, "Fitting", nil, "partySize", .outOfRange),
            (2, 0, "Fitting", nil, "endsAt", .invalidOrder),
            (2, -60, "Fitting", nil, "endsAt", .invalidOrder),
            (2, 1800, "", nil, "topic", .empty),
            (2, 1800, String(repeating: "t", count: 201), nil, "topic", .tooLong),
            (2, 1800, "Fitting", String(repeating: "n", count: 2001), "notes", .tooLong),
        ]
    )
    func rules(
        party: Int,
        length: Double,
        topic: String,
        notes: String?,
        field: String,
        code: ValidationError.Code
    ) {
        #expect {
            try Reservation(
                startsAt: Self.start,
                endsAt: Self.start.addingTimeInterval(length),
                storeID: berlinStore,
                customerID: UUID(),
                partySize: party,
                topic: topic,
                notes: notes
            )
        } throws: { error in
            (error as? ValidationError)?.field == field && (error as? ValidationError)?.code == code
        }
    }

    @Test("party sizes 1 and 50 are allowed", arguments: [1, 50])
    func partyBounds(size: Int) throws {
        #expect(try Self.make(partySize: size).partySize == size)
    }

    static let valid = """
        {"id":"3F2504E0-4F89-41D3-9A0C-0305E82C3301","confirmationCode":"FK6S-Y95A","version":1,"status":"requested",
         "startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T09:30:00Z",
         "storeID":"6F1C2B7A-9E0D-4C1B-8A55-2D4E6F708192","customerID":"0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E",
         "partySize":1,"topic":"Suit fitting"}
        """

    @Test(
        "decoding rejects bad values and names the field",
        arguments: [
            (
                #""confirmationCode":"FK6S-Y95A""#, #""confirmationCode":"FK6S-Y95B""#,
                "confirmationCode", ValidationError.Code.invalidCheckDigit
            ),
            (
                #""endsAt":"2026-12-01T09:30:00Z""#, #""endsAt":"2026-12-01T08:30:00Z""#, "endsAt",
                .invalidOrder
            ),
            (
                #""endsAt":"2026-12-01T09:30:00Z""#, #""endsAt":"2026-02-30T09:30:00Z""#, "endsAt",
                .invalidDate
            ),
            (
                #""startsAt":"2026-12-01T09:00:00Z""#, #""startsAt":"2026-12-01 09:00""#,
                "startsAt", .invalidFormat
            ),
            (#""partySize":1"#, #""partySize":0"#, "partySize", .outOfRange),
            (#""version":1"#, #""version":0"#, "version", .outOfRange),
            (#""version":1"#, #""version":9223372036854775807"#, "version", .outOfRange),
            (#""status":"requested""#, #""status":"pending""#, "status", .unknownValue),
            (
                #""topic":"Suit fitting""#, #""topic":"\#(String(repeating: "x", count: 201))""#,
                "topic", .tooLong
            ),
            (
                #""topic":"Suit fitting""#,
                #""topic":"Suit fitting","notes":"\#(String(repeating: "x", count: 2001))""#,
                "notes", .tooLong
            ),
        ]
    )
    func decodeErrors(
        original: String,
        replacement: String,
        field: String,
        code: ValidationError.Code
    ) throws {
        let json = Self.valid.replacingOccurrences(of: original, with: replacement)
        #expect(json != Self.valid)
        let error = try decodeFailure(Reservation.self, json)
        #expect(error.field == field)
        #expect(error.code == code)
    }

    @Test("errors inside a list name the item's index")
    func nestedPath() throws {
        let bad = Self.valid.replacingOccurrences(of: #""partySize":1"#, with: #""partySize":99"#)
        let error = try decodeFailure([Reservation].self, "[\(Self.valid),\(bad)]")
        #expect(error.field == "1.partySize")
        do {
            _ = try JSONDecoder.shopfloor.decode(
                [Reservation].self,
                from: Data("[\(Self.valid),\(bad)]".utf8)
            )
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.codingPath.map(\.stringValue).last == "partySize")
            #expect(context.debugDescription.contains("partySize"))
        }
    }

    @Test("a missing key or wrong type is an ordinary DecodingError")
    func structural() {
        let missing = Self.valid.replacingOccurrences(
            of: #""topic":"Suit fitting""#,
            with: #""x":1"#
        )
        #expect(throws: DecodingError.self) {
            try JSONDecoder.shopfloor.decode(Reservation.self, from: Data(missing.utf8))
        }
        let badID = Self.valid.replacingOccurrences(of: "3F2504E0-4F89", with: "nope")
        #expect(throws: DecodingError.self) {
            try JSONDecoder.shopfloor.decode(Reservation.self, from: Data(badID.utf8))
        }
    }

    @Test("ids are UUID strings: any case in, Foundation's uppercase form out", arguments: 0..<20)
    func uuids(seed: Int) throws {
        let id = UUID()
        var reservation = try Self.make()
        reservation.id = id
        let json = String(decoding: try JSONEncoder.shopfloor.encode(reservation), as: UTF8.self)
        #expect(json.contains(#""id":"\#(id.uuidString)""#))
        let lower = json.replacingOccurrences(of: id.uuidString, with: id.uuidString.lowercased())
        #expect(try JSONDecoder.shopfloor.decode(Reservation.self, from: Data(lower.utf8)).id == id)
    }

    @Test(
        "malformed ids are rejected naming the field",
        arguments: [
            "3F2504E0-4F89-41D3-9A0C-0305E82C330", "3F2504E0-4F89-41D3-9A0C-0305E82C33011",
            "3F2504E0X4F89-41D3-9A0C-0305E82C3301",
            "3F2504E0-4F89-41D3-9A0C-0305E82C330G", "", "{3F2504E0-4F89-41D3-9A0C-0305E82C3301}",
        ]
    )
    func badIDs(id: String) throws {
        let error = try decodeFailure(
            Reservation.self,
            Self.valid.replacingOccurrences(of: "3F2504E0-4F89-41D3-9A0C-0305E82C3301", with: id)
        )
        #expect(error.field == "id")
    }

    @Test("a reservation round-trips and encodes camelCase keys in sorted order")
    func encoding() throws {
        var reservation = try Self.make()
        reservation.notes = "Line one\nLine two"
        #expect(try roundTrip(reservation) == reservation)
        let json = String(decoding: try JSONEncoder.shopfloor.encode(reservation), as: UTF8.self)
        let keys = [
            "confirmationCode", "customerID", "endsAt", "id", "notes", "partySize", "startsAt",
            "status", "storeID", "topic", "version",
        ]
        var last = json.startIndex
        for key in keys {
            let range = try #require(json.range(of: "\"\(key)\":"), "missing \(key)")
            #expect(range.lowerBound >= last, "\(key) out of order")
            last = range.lowerBound
        }
        #expect(json.contains(#""confirmationCode":"FK6S-Y95A""#))
        #expect(json.contains(#""startsAt":"2026-12-01T09:00:00.000Z""#))
    }

    @Test("ten thousand generated reservations round-trip")
    func bulk() throws {
        var rng = SplitMix64(state: 7)
        let reservations = try (0..<10_000).map { index in
            let start = Self.start.addingTimeInterval(Double(index) * 900)
            return try Reservation(
                id: UUID(),
                confirmationCode: .random(using: &rng),
                status: Status.allCases[index % 6],
                startsAt: start,
                endsAt: start.addingTimeInterval(1800),
                storeID: berlinStore,
                customerID: UUID(),
                partySize: index % 50 + 1,
                topic: "Topic \(index)",
                notes: index % 3 == 0 ? nil : "Note \(index)"
            )
        }
        #expect(try roundTrip(reservations) == reservations)
    }
}
