public import Foundation

/// An article in the catalogue, identified by its GTIN.
///
/// Rules: `sku` 1–64 characters without whitespace; `title` non-empty, single line, at most 200
/// characters; `brand` at most 200; `imageReference` at most 2048 characters, no whitespace (a
/// URL or an image-store key).
public struct Product: Sendable, Hashable, Codable, Identifiable {
    /// Where a product is in its catalogue life.
    public enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Being set up; not sold yet.
        case draft
        /// On sale.
        case active
        /// No longer ordered; remaining stock may be sold.
        case discontinued
        /// Must not be sold (a safety recall).
        case recalled
    }

    /// The GTIN, stored as 14 digits.
    public var gtin: GTIN
    /// The retailer's own article number.
    public var sku: String
    /// The name shown to customers.
    public var title: String
    /// The brand, if any.
    public var brand: String?
    /// Catalogue status.
    public var status: Status
    /// The price.
    public var price: Money
    /// A URL or image-store key of the main picture.
    public var imageReference: String?

    /// The GTIN is the identity.
    public var id: GTIN { gtin }

    /// Makes and validates a product.
    public init(
        gtin: GTIN,
        sku: String,
        title: String,
        brand: String? = nil,
        status: Status = .active,
        price: Money,
        imageReference: String? = nil
    ) throws(ValidationError) {
        self.gtin = gtin
        self.sku = sku
        self.title = title
        self.brand = brand
        self.status = status
        self.price = price
        self.imageReference = imageReference
        try validate()
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        try Check.name(sku, field: "sku", max: ModelLimits.codeLength)
        if sku.contains(where: \.isWhitespace) {
            throw ValidationError(
                field: "sku",
                code: .invalidFormat,
                reason: "must not contain whitespace"
            )
        }
        try Check.name(title, field: "title")
        if let brand { try Check.line(brand, field: "brand") }
        if let imageReference {
            try Check.name(imageReference, field: "imageReference", max: 2048)
            if imageReference.contains(where: \.isWhitespace) {
                throw ValidationError(
                    field: "imageReference",
                    code: .invalidFormat,
                    reason: "must not contain whitespace"
                )
            }
        }
    }

    private enum CodingKeys: String, CodingKey {
        case gtin, sku, title, brand, status, price, imageReference
    }

    /// Decodes and validates a product; unknown keys are ignored.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        gtin = try c.decode(GTIN.self, forKey: .gtin)
        sku = try c.decode(String.self, forKey: .sku)
        title = try c.decode(String.self, forKey: .title)
        brand = try c.decodeIfPresent(String.self, forKey: .brand)
        let statusText = try c.decode(String.self, forKey: .status)
        status = try c.validating(.status) { () throws(ValidationError) in
            guard let status = Status(rawValue: statusText) else {
                throw ValidationError(
                    field: "status",
                    code: .unknownValue,
                    reason:
                        "\"\(statusText.prefix(30))\" is not one of \(Status.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            return status
        }
        price = try c.decode(Money.self, forKey: .price)
        imageReference = try c.decodeIfPresent(String.self, forKey: .imageReference)
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }
}

/// A shop: where reservations happen and feature flags are targeted.
///
/// Rules: `name` non-empty, single line, at most 200 characters; `timeZone` an IANA identifier
/// that `TimeZone(identifier:)` knows (`Europe/Berlin`, `UTC`); `market` and `region` 1–64
/// characters of letters, digits, `-` and `_` (for example market `DE`, region `DE-BE`).
public struct Store: Sendable, Hashable, Codable, Identifiable {
    /// The store's id.
    public var id: UUID
    /// The store's name.
    public var name: String
    /// The IANA time zone identifier, e.g. `Europe/Berlin`.
    public var timeZone: String
    /// The market (often a country) the store belongs to; flags can target it.
    public var market: String
    /// The region within or across markets; flags can target it.
    public var region: String
    /// A short name people type instead of the id (`berlin-kurfuerstendamm`): 1–64 lowercase
    /// letters, digits and `-`, unique among the server's stores; absent from older servers.
    public var shortName: String?
    /// When the store takes reservations, in its local time; nil (and absent on the wire) when
    /// it has no opening hours and takes them at any time, or from an older server.
    public var openingHours: OpeningHours?

    /// Makes and validates a store.
    public init(
        id: UUID = UUID(),
        name: String,
        timeZone: String,
        market: String,
        region: String,
        shortName: String? = nil,
        openingHours: OpeningHours? = nil
    ) throws(ValidationError) {
        self.id = id
        self.name = name
        self.timeZone = timeZone
        self.market = market
        self.region = region
        self.shortName = shortName
        self.openingHours = openingHours
        try validate()
    }

    /// Whether `text` has the form of a short name (it may still name no store).
    public static func isShortName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && !text.hasPrefix("-") && !text.hasSuffix("-")
            && text.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                    || $0 == UInt8(ascii: "-")
            }
    }

    /// The short name a store called `name` gets: lowercase ASCII, German umlauts and ß spelt
    /// out, other accents dropped, runs of anything else as one `-` (`Berlin Kurfürstendamm` →
    /// `berlin-kurfuerstendamm`); `store` when nothing is left.
    public static func shortName(for name: String) -> String {
        var spelt = ""
        for character in name.lowercased() {
            switch character {
            case "ä": spelt += "ae"
            case "ö": spelt += "oe"
            case "ü": spelt += "ue"
            case "ß": spelt += "ss"
            default: spelt.append(character)
            }
        }
        let folded = spelt.folding(options: [.diacriticInsensitive], locale: nil)
        var slug = ""
        for scalar in folded.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                slug.unicodeScalars.append(scalar)
            } else if !slug.isEmpty, !slug.hasSuffix("-") {
                slug += "-"
            }
        }
        while slug.hasSuffix("-") { slug.removeLast() }
        return slug.isEmpty ? "store" : String(slug.prefix(64))
    }

    /// The store's time zone (UTC if the identifier was changed to an unknown one after
    /// validation).
    public var resolvedTimeZone: TimeZone {
        TimeZone(identifier: timeZone) ?? TimeZone(identifier: "UTC")!
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        try Check.name(name, field: "name")
        try Store.checkTimeZone(timeZone)
        try Store.checkCode(market, field: "market")
        try Store.checkCode(region, field: "region")
        if let shortName, !Store.isShortName(shortName) {
            throw ValidationError(
                field: "shortName",
                code: .invalidFormat,
                reason: "\"\(shortName.prefix(64))\" is not 1–64 lowercase letters, digits and -"
            )
        }
    }

    static func checkTimeZone(_ identifier: String) throws(ValidationError) {
        // TimeZone(identifier:) also takes offsets such as "GMT+2"; an IANA name is a word
        // ("UTC") or Area/Location, so those are refused first.
        let shapeOK =
            !identifier.isEmpty && identifier.utf8.count <= 64
            && identifier.allSatisfy {
                $0.isASCII && ($0.isLetter || $0.isNumber || "/_-+".contains($0))
            }
            && !identifier.hasPrefix("GMT+") && !identifier.hasPrefix("GMT-")
        guard shapeOK, TimeZone(identifier: identifier) != nil else {
            throw ValidationError(
                field: "timeZone",
                code: .unknownValue,
                reason:
                    "\"\(identifier.prefix(64))\" is not an IANA time zone identifier such as Europe/Berlin"
            )
        }
    }

    static func checkCode(_ value: String, field: String) throws(ValidationError) {
        guard !value.isEmpty else {
            throw ValidationError(field: field, code: .empty, reason: "must not be empty")
        }
        try Check.length(value, field: field, max: ModelLimits.codeLength)
        guard
            value.allSatisfy({
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_")
            })
        else {
            throw ValidationError(
                field: field,
                code: .invalidFormat,
                reason: "\"\(value)\" may hold only letters, digits, - and _"
            )
        }
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, timeZone, market, region, shortName, openingHours
    }

    /// Decodes and validates a store; unknown keys are ignored.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeUUID(.id)
        name = try c.decode(String.self, forKey: .name)
        timeZone = try c.decode(String.self, forKey: .timeZone)
        market = try c.decode(String.self, forKey: .market)
        region = try c.decode(String.self, forKey: .region)
        shortName = try c.decodeIfPresent(String.self, forKey: .shortName)
        openingHours = try c.decodeIfPresent(OpeningHours.self, forKey: .openingHours)
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }
}
