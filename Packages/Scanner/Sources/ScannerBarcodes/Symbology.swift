/// A barcode symbology. Raw values are the suite's format names (`QRCode`, `EAN13`, ...).
public enum Symbology: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case qrCode = "QRCode"
    case microQRCode = "MicroQRCode"
    case dataMatrix = "DataMatrix"
    case pdf417 = "PDF417"
    case aztec = "Aztec"
    case ean13 = "EAN13"
    case ean8 = "EAN8"
    case upcA = "UPCA"
    case upcE = "UPCE"
    case code128 = "Code128"
    case code39 = "Code39"
    case code93 = "Code93"
    case itf = "ITF"
    case codabar = "Codabar"
    case dataBar = "DataBar"
    /// MaxiCode (UPS parcels). ZXing-C++ reads it only upright and filling the image; the
    /// balanced and thorough searches find it by its bullseye at any turn
    /// (``MaxiCodeLocator``).
    case maxiCode = "MaxiCode"

    /// The lowercase name used on command lines (`qr`, `datamatrix`, `ean13`, ...).
    public var commandLineName: String {
        switch self {
        case .qrCode: "qr"
        case .microQRCode: "microqr"
        default: rawValue.lowercased()
        }
    }

    /// The label zbarimg prints before a payload (`QR-Code`, `EAN-13`, `CODE-128`, ...).
    public var zbarLabel: String {
        switch self {
        case .qrCode: "QR-Code"
        case .microQRCode: "MicroQR-Code"
        case .dataMatrix: "DataMatrix"
        case .pdf417: "PDF417"
        case .aztec: "Aztec"
        case .ean13: "EAN-13"
        case .ean8: "EAN-8"
        case .upcA: "UPC-A"
        case .upcE: "UPC-E"
        case .code128: "CODE-128"
        case .code39: "CODE-39"
        case .code93: "CODE-93"
        case .itf: "I2/5"
        case .codabar: "Codabar"
        case .dataBar: "DataBar"
        case .maxiCode: "MaxiCode"
        }
    }

    /// Parses a command-line name (`qr`, `ean13`, ...) or a format name (`QRCode`), case-blind.
    public init?(name: String) {
        let key = name.lowercased().filter { $0 != "-" && $0 != "_" }
        let aliases: [String: Symbology] = [
            "qr": .qrCode, "qrcode": .qrCode, "microqr": .microQRCode, "microqrcode": .microQRCode,
            "datamatrix": .dataMatrix, "dm": .dataMatrix, "pdf417": .pdf417, "aztec": .aztec,
            "ean13": .ean13, "ean8": .ean8, "upca": .upcA, "upce": .upcE, "code128": .code128,
            "code39": .code39, "code93": .code93, "itf": .itf, "i25": .itf, "codabar": .codabar,
            "databar": .dataBar, "rss": .dataBar, "maxicode": .maxiCode,
        ]
        guard let value = aliases[key] else { return nil }
        self = value
    }

    /// Linear (1D) symbologies.
    public var isLinear: Bool {
        switch self {
        case .qrCode, .microQRCode, .dataMatrix, .pdf417, .aztec, .maxiCode: false
        default: true
        }
    }

    /// Sorted by declaration order.
    public static func < (a: Symbology, b: Symbology) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
