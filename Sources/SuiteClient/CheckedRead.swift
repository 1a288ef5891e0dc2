public import Foundation
public import Models

extension SuiteClient {
    /// Runs `read` while the client configuration is fetched beside it: the read does not
    /// wait for the configuration, but a forced update decides before the read's value is
    /// returned, online or offline (a kept configuration is checked against this build).
    ///
    /// - Parameters:
    ///   - store: the store whose flags the configuration should resolve, if any.
    ///   - read: the read (a `get`, `product(_:)`, ...).
    /// - Returns: the read's value, and the configuration or why it could not be had
    ///   (offline with no copy kept, a server error); that alone never stops a read.
    /// - Throws: ``SuiteClientError`` `updateRequired`, else the read's error.
    public func checkedRead<Value: Sendable>(
        store: UUID? = nil,
        _ read: @escaping @Sendable () async throws(SuiteClientError) -> Value
    ) async throws(SuiteClientError) -> (
        value: Value, configuration: Result<ClientConfigurationResponse, SuiteClientError>
    ) {
        async let configuration = configurationResult(store: store)
        async let value = readResult(read)
        let checked = await configuration
        if case .failure(let error) = checked, error.code == .updateRequired {
            throw error
        }
        return (try await value.get(), checked)
    }

    private func configurationResult(store: UUID?) async -> Result<
        ClientConfigurationResponse, SuiteClientError
    > {
        do throws(SuiteClientError) {
            return .success(try await clientConfiguration(store: store).value)
        } catch {
            return .failure(error)
        }
    }

    private func readResult<Value: Sendable>(
        _ read: @Sendable () async throws(SuiteClientError) -> Value
    ) async -> Result<Value, SuiteClientError> {
        do throws(SuiteClientError) {
            return .success(try await read())
        } catch {
            return .failure(error)
        }
    }
}
