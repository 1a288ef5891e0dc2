public import Foundation
public import ScannerImages

/// The engine that decoded a symbol.
public enum BarcodeEngine: String, Sendable, Hashable, Codable, CaseIterable {
    /// ZXing-C++.
    case zxing
    /// libzbar.
    case zbar
    /// Shopfloor's own fit of blurred EAN-13, UPC-A, EAN-8 and UPC-E modules, for bars too
    /// blurred for the others.
    case templates
}

/// One decoded symbol, merged from every engine and pass that read it.
public struct Barcode: Sendable, Hashable, Codable {
    /// The symbology.
    public var symbology: Symbology
    /// The payload as text: UTF-8, with Shift-JIS and ECI designations applied; GS1 element
    /// strings separated by GS (U+001D). UPC-A and UPC-E are 13 digits with a leading 0 (UPC-E
    /// expanded to its UPC-A form), as GS1 transmits them with identifier `]E0`.
    public var text: String
    /// The payload's bytes as encoded in the symbol.
    public var bytes: Data
    /// The corners (top-left, top-right, bottom-right, bottom-left for 2D symbols; the ends of
    /// the scan line for 1D symbols read by zbar) in the original image's coordinates.
    public var points: [ImagePoint]
    /// The engine whose reading is reported.
    public var engine: BarcodeEngine
    /// Whether the payload is a GS1 element string (FNC1 in first position).
    public var isGS1: Bool
    /// The ISO/IEC 15424 symbology identifier, such as `]Q1`, `]E0` or `]C1`.
    public var symbologyIdentifier: String

    /// Creates a barcode value.
    public init(
        symbology: Symbology,
        text: String,
        bytes: Data,
        points: [ImagePoint],
        engine: BarcodeEngine,
        isGS1: Bool,
        symbologyIdentifier: String
    ) {
        self.symbology = symbology
        self.text = text
        self.bytes = bytes
        self.points = points
        self.engine = engine
        self.isGS1 = isGS1
        self.symbologyIdentifier = symbologyIdentifier
    }

    /// The axis-aligned box around ``points``.
    public var boundingBox: PixelRect { PixelRect(bounding: points) }
}
