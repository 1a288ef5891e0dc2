/// The one version of the whole Shopfloor suite: every app's `--version`, the version the
/// clients report to the server for the minimum-version check, and the server's `/health`.
public enum SuiteVersion {
    /// Semantic version of this build of the suite.
    public static let semantic = SemanticVersion(0, 1, 0)

    /// ``semantic`` as text (`0.1.0`).
    public static let current = semantic.description
}
