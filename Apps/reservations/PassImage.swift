import ClientCommands
import Models
import SuiteClient

/// Reads a customer's pass with the suite's `scan` tool (``ScannedImage``).
enum PassImage {
    /// The confirmation code on the pass in `file`: the first symbol that is a code or a
    /// `shopfloor://reservations/CODE` payload.
    /// - Throws: ``SuiteClientError``: `unreadableInput` (no such file, no code on the pass),
    ///   `storage` (`scan` is missing or failed).
    static func code(in file: String, deadline: Duration) throws(SuiteClientError)
        -> ConfirmationCode
    {
        // Bounded by the command's deadline: a stuck scan is stopped, not waited for.
        let scanned = try ScannedImage(file: file, timeout: deadline)
        for symbol in scanned.symbols {
            if let code = try? ConfirmationCode(passPayload: symbol.text) { return code }
        }
        throw scanned.nothingFound(in: file, wanted: "reservation code")
    }
}
