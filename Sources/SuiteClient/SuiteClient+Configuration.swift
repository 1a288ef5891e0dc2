public import Foundation
public import Models

extension SuiteClient {
    // MARK: Client configuration

    /// The client configuration for this app (and `store`, for its flags), fetched with
    /// `If-None-Match` against the last good copy, which is kept in the cache. Offline, the
    /// last good copy answers (``Fetched/origin`` is `cache`).
    ///
    /// - Parameter enforceMinimumVersion: throw `updateRequired` when this app is below the
    ///   server's minimum version (checked again on a cached copy, against this build).
    /// - Throws: ``SuiteClientError`` `updateRequired`, `offline` (no copy kept), `notFound`
    ///   (unknown store), `server`.
    public func clientConfiguration(store: UUID? = nil, enforceMinimumVersion: Bool = true)
        async throws(SuiteClientError) -> Fetched<ClientConfigurationResponse>
    {
        var query = [
            URLQueryItem(name: "app", value: configuration.appName),
            URLQueryItem(name: "version", value: configuration.appVersion.description),
        ]
        if let store { query.append(URLQueryItem(name: "store", value: store.uuidString)) }
        var request = request(path: "/v1/config/client", query: query)
        // The version is left out of the key: a newer build re-checks the same copy.
        let key = ResponseKey(
            namespace: "config",
            name: "\(server.origin) \(configuration.appName) \(store?.uuidString ?? "global")"
        )
        let kept = cache.read(key)
        let keptValue = kept.flatMap {
            try? ModelsJSON.makeDecoder().decode(ClientConfigurationResponse.self, from: $0.body)
        }
        if let etag = kept?.etag, keptValue != nil {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
        }
        let fetched: Fetched<ClientConfigurationResponse>
        do {
            let (data, response) = try await send(request, signed: isSignedInHere)
            if response.statusCode == 304, let kept, let keptValue {
                fetched = Fetched(value: keptValue, origin: .server, etag: kept.etag)
                // Checked just now: the kept copy's time says so, to the minute (a copy
                // confirmed less than a minute ago is not written again, so commands in
                // quick succession at a counter write nothing).
                if abs(Date().timeIntervalSince(kept.fetchedAt)) >= Self.configurationRecheckWrite {
                    try? cache.write(key, body: kept.body, etag: kept.etag)
                }
            } else {
                try check(response, data, what: "the client configuration")
                let value = try decode(
                    ClientConfigurationResponse.self,
                    data,
                    what: "/v1/config/client"
                )
                let etag = response.value(forHTTPHeaderField: "ETag")
                do { try cache.write(key, body: data, etag: etag) } catch {
                    logger.warning(
                        "cannot keep the client configuration",
                        metadata: ["error": "\(error)"]
                    )
                }
                fetched = Fetched(value: value, origin: .server, etag: etag)
            }
        } catch {
            guard error.code == .offline || error.code == .server, let kept, let keptValue else {
                throw error
            }
            fetched = Fetched(
                value: keptValue,
                origin: .cache(fetchedAt: kept.fetchedAt, reason: error.message),
                etag: kept.etag
            )
        }
        if enforceMinimumVersion { try checkVersion(fetched.value) }
        return fetched
    }

    /// After a `304`, the kept configuration's time is written again only when it is at
    /// least this old (seconds): the age an offline command shows is exact to the minute.
    static let configurationRecheckWrite: TimeInterval = 60

    /// Throws `updateRequired` when the server asks for a newer client than this one.
    public func checkVersion(_ response: ClientConfigurationResponse) throws(SuiteClientError) {
        let minimum = response.configuration.minimumClientVersion
        let ours = configuration.appVersion
        guard ours < minimum || (response.updateRequired && ours <= minimum) else { return }
        throw SuiteClientError(
            .updateRequired,
            "update required: this \(configuration.appName) is version \(ours); the server at \(server) requires \(minimum) or later"
        )
    }
}
