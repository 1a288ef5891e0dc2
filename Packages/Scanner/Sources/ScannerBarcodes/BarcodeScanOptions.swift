public import ScannerImages

/// What to look for and how hard to try. `Codable`, so a suite can store its settings.
public struct BarcodeScanOptions: Sendable, Hashable, Codable {
    /// How much work to spend on an image that the first pass finds nothing in.
    public enum Effort: String, Sendable, Hashable, Codable, CaseIterable {
        /// One pass of each engine; no fallbacks. For live video and clean labels.
        case fast
        /// The first passes, then a few cheap fallbacks (other binarizer, scaling).
        case balanced
        /// Every fallback: scaling, binarizers, contrast, rotations, inversion.
        case thorough
    }

    /// The symbologies to report; others are neither searched nor reported.
    public var symbologies: Set<Symbology>
    /// Only this part of the image is searched; points are still in the whole image's coordinates.
    public var regionOfInterest: PixelRect?
    /// How much work to spend.
    public var effort: Effort
    /// Also look for symbols rotated by 90°, 180° and 270° (and 45° when thorough).
    public var searchesRotations: Bool
    /// Also look for light-on-dark (inverted) symbols.
    public var searchesInverted: Bool
    /// Stop after this many distinct symbols; `nil` for no limit.
    public var maximumSymbols: Int?

    /// Creates options; the defaults are those of ``standard``.
    public init(
        symbologies: Set<Symbology> = Set(Symbology.allCases),
        regionOfInterest: PixelRect? = nil,
        effort: Effort = .balanced,
        searchesRotations: Bool = true,
        searchesInverted: Bool = true,
        maximumSymbols: Int? = nil
    ) {
        self.symbologies = symbologies
        self.regionOfInterest = regionOfInterest
        self.effort = effort
        self.searchesRotations = searchesRotations
        self.searchesInverted = searchesInverted
        self.maximumSymbols = maximumSymbols
    }

    /// Every symbology, balanced effort, rotations and inversion searched.
    public static let standard = BarcodeScanOptions()

    /// Every symbology, as much effort as it takes: photos, damaged and odd symbols.
    public static let thorough = BarcodeScanOptions(effort: .thorough)

    /// Every symbology, first passes only: live video, clean printed labels.
    public static let fast = BarcodeScanOptions(
        effort: .fast,
        searchesRotations: false,
        searchesInverted: false
    )

    /// Product labels at the till: EAN/UPC and the GS1 carriers (Code 128, DataMatrix, DataBar, QR).
    public static let retail = BarcodeScanOptions(
        symbologies: [.ean13, .ean8, .upcA, .upcE, .code128, .dataBar, .dataMatrix, .qrCode])

    /// Customer passes and documents: the 2D symbologies.
    public static let passes = BarcodeScanOptions(
        symbologies: [.qrCode, .microQRCode, .dataMatrix, .pdf417, .aztec])
}
