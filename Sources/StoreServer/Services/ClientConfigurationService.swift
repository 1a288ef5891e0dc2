internal import Foundation
internal import Models

/// The configuration an app sees: flags resolved for its store, the customer form, and
/// whether its version is below the minimum.
struct ClientConfigurationService: Sendable {
    let repository: Repository
    let config: ConfigService

    /// The configuration for `app` at `version`, for `storeID` when given, and the
    /// configuration's version (part of the ETag).
    /// - Throws: a 404 for an unknown store.
    func configuration(app: String, version: SemanticVersion, storeID: UUID?) async throws
        -> (response: ClientConfigurationResponse, configVersion: SemanticVersion)
    {
        var store: Store?
        if let storeID {
            guard let found = try await repository.store(id: storeID, scope: .everyStore) else {
                throw APIError.notFound("store \(storeID.uuidString) does not exist")
            }
            store = found
        }
        let snapshot = try await config.current()
        let configuration: ClientConfiguration
        do {
            configuration = try snapshot.configuration(for: app)
        } catch {
            throw APIError.unavailable("the stored configuration is invalid: \(error)")
        }
        let response = ClientConfigurationResponse(
            configuration: configuration,
            store: store,
            flags: configuration.flags(for: store.map { FlagTarget(store: $0) } ?? .global),
            updateRequired: configuration.requiresUpdate(clientVersion: version)
        )
        return (response, snapshot.version)
    }
}
