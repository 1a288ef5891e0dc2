/// The one version of the whole Shopfloor suite; every app's `--version` prints it.
public enum SuiteVersion {
    /// Semantic version of this build of the suite.
    public static let current = "0.1.0"
}
