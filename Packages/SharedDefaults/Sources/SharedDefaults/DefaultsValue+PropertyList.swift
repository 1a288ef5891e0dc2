public import Foundation

extension DefaultsValue {
    /// The value as an XML property list (Apple's `PropertyList-1.0` DTD), as
    /// `defaults export` writes it. Dates are written in whole seconds, as the format has
    /// it; a non-finite double is written as `nan`, `+infinity` or `-infinity`.
    public func propertyListXML() -> String {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" \
            "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        Self.writePlist(self, into: &out, indent: 0)
        out += "</plist>\n"
        return out
    }

    /// Parses a property list (XML, binary or OpenStep text, as Foundation reads them).
    /// - Throws: ``DefaultsValueParseError`` when the bytes are not a property list.
    public init(propertyList data: Data) throws(DefaultsValueParseError) {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw DefaultsValueParseError(offset: 0, message: "not a property list: \(error)")
        }
        self = try Self(propertyListObject: object, depth: 0)
    }

    private init(propertyListObject object: Any, depth: Int) throws(DefaultsValueParseError) {
        guard depth < JSONParser.maximumDepth else {
            throw DefaultsValueParseError(offset: 0, message: "property list nested too deeply")
        }
        // A Bool must be checked by its dynamic type: `NSNumber(1) is Bool` is true.
        if type(of: object) == Bool.self, let bool = object as? Bool {
            self = .bool(bool)
        } else if let string = object as? String {
            self = .string(string)
        } else if let date = object as? Date {
            self = .date(date)
        } else if let data = object as? Data {
            self = .data(data)
        } else if let number = object as? NSNumber {
            let kind = String(cString: number.objCType)
            if kind == "c" || kind == "B" {
                self = .bool(number.boolValue)
            } else if kind == "d" || kind == "f" {
                self = .double(number.doubleValue)
            } else {
                self = .int(number.intValue)
            }
        } else if let array = object as? [Any] {
            var elements: [DefaultsValue] = []
            for element in array {
                elements.append(try DefaultsValue(propertyListObject: element, depth: depth + 1))
            }
            self = .array(elements)
        } else if let dictionary = object as? [String: Any] {
            var entries: [String: DefaultsValue] = [:]
            for (key, element) in dictionary {
                entries[key] = try DefaultsValue(propertyListObject: element, depth: depth + 1)
            }
            self = .dictionary(entries)
        } else {
            throw DefaultsValueParseError(
                offset: 0,
                message: "unsupported property-list value of type \(type(of: object))"
            )
        }
    }

    private static func writePlist(_ value: DefaultsValue, into out: inout String, indent: Int) {
        let pad = String(repeating: "\t", count: indent)
        switch value {
        case .string(let string): out += "\(pad)<string>\(escapeXML(string))</string>\n"
        case .int(let int): out += "\(pad)<integer>\(int)</integer>\n"
        case .double(let double):
            let text: String
            if double.isNaN {
                text = "nan"
            } else if double.isInfinite {
                text = double > 0 ? "+infinity" : "-infinity"
            } else {
                text = "\(double)"
            }
            out += "\(pad)<real>\(text)</real>\n"
        case .bool(let bool): out += "\(pad)<\(bool ? "true" : "false")/>\n"
        case .date(let date):
            let whole = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
            out += "\(pad)<date>\(rfc3339(whole))</date>\n"
        case .data(let data): out += "\(pad)<data>\(data.base64EncodedString())</data>\n"
        case .array(let elements):
            if elements.isEmpty {
                out += "\(pad)<array/>\n"
                return
            }
            out += "\(pad)<array>\n"
            for element in elements { writePlist(element, into: &out, indent: indent + 1) }
            out += "\(pad)</array>\n"
        case .dictionary(let entries):
            if entries.isEmpty {
                out += "\(pad)<dict/>\n"
                return
            }
            out += "\(pad)<dict>\n"
            for key in entries.keys.sorted() {
                out += "\(pad)\t<key>\(escapeXML(key))</key>\n"
                writePlist(entries[key]!, into: &out, indent: indent + 1)
            }
            out += "\(pad)</dict>\n"
        }
    }

    private static func escapeXML(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default:
                // XML 1.0 cannot hold most control characters even escaped; keep tab, LF, CR.
                if scalar.value < 0x20 && scalar != "\t" && scalar != "\n" && scalar != "\r" {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
