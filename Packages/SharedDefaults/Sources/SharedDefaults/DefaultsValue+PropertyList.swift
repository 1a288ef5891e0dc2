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

    /// Parses an XML or binary property list, as `defaults export` writes them; arrays and
    /// dictionaries may nest `maximumNestingDepth` levels (see
    /// ``init(jsonText:maximumNestingDepth:)``).
    ///
    /// OpenStep text property lists are refused: Foundation's parser for them prints to
    /// stderr on some errors, and nothing in the suite writes them.
    /// - Throws: ``DefaultsValueParseError`` when the bytes are not such a property list.
    public init(
        propertyList data: Data,
        maximumNestingDepth: Int = DefaultsLimits.maximumNestingDepth
    ) throws(DefaultsValueParseError) {
        guard Self.isXMLOrBinaryPropertyList(data) else {
            throw DefaultsValueParseError(
                offset: 0,
                message: "not JSON or a property list (XML or binary)"
            )
        }
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            let detail =
                ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String)
                ?? error.localizedDescription
            throw DefaultsValueParseError(
                offset: 0,
                message: "not a valid property list: \(detail)"
            )
        }
        self = try Self(propertyListObject: object, depth: 0, maximum: maximumNestingDepth)
    }

    /// `bplist00`, or XML (after an optional byte-order mark and white space: `<?xml`,
    /// `<!DOCTYPE plist` or `<plist`).
    static func isXMLOrBinaryPropertyList(_ data: Data) -> Bool {
        if data.starts(with: Array("bplist".utf8)) { return true }
        var bytes = data[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let text = bytes.drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) }.prefix(16)
        return [Array("<?xml".utf8), Array("<!DOCTYPE".utf8), Array("<plist".utf8)].contains {
            text.starts(with: $0)
        }
    }

    private init(propertyListObject object: Any, depth: Int, maximum: Int)
        throws(DefaultsValueParseError)
    {
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
            try Self.checkNesting(depth, maximum: maximum)
            var elements: [DefaultsValue] = []
            for element in array {
                elements.append(
                    try DefaultsValue(
                        propertyListObject: element,
                        depth: depth + 1,
                        maximum: maximum
                    )
                )
            }
            self = .array(elements)
        } else if let dictionary = object as? [String: Any] {
            try Self.checkNesting(depth, maximum: maximum)
            var entries: [String: DefaultsValue] = [:]
            for (key, element) in dictionary {
                entries[key] = try DefaultsValue(
                    propertyListObject: element,
                    depth: depth + 1,
                    maximum: maximum
                )
            }
            self = .dictionary(entries)
        } else {
            throw DefaultsValueParseError(
                offset: 0,
                message: "unsupported property-list value of type \(type(of: object))"
            )
        }
    }

    private static func checkNesting(_ depth: Int, maximum: Int) throws(DefaultsValueParseError) {
        guard depth < maximum else {
            throw DefaultsValueParseError(
                offset: 0,
                message:
                    "the property list nests arrays and dictionaries more than \(maximum) levels deep (the limit of a suite's values is \(DefaultsLimits.maximumNestingDepth))",
                limit: .nestingDepth
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
