/// A point in the scanned image's own pixel coordinates.
public struct ImagePoint: Sendable, Hashable, Codable {
    /// Horizontal position, from the left edge.
    public var x: Int
    /// Vertical position, from the top edge.
    public var y: Int

    /// Creates a point.
    public init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }
}
