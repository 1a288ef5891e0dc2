internal import Foundation
public import Models

extension SuiteClient {
    /// The customers the server finds for `text` (`GET /v1/customers?query=`), within the
    /// signed-in associate's stores; never answered from kept data (a booking must not guess).
    /// - Throws: ``SuiteClientError`` (`offline` when the server cannot be reached).
    public func customers(matching text: String, limit: Int = 20) async throws(SuiteClientError)
        -> [Customer]
    {
        let (data, response) = try await send(
            request(
                path: "/v1/customers",
                query: [
                    URLQueryItem(name: "query", value: text),
                    URLQueryItem(name: "limit", value: String(limit)),
                ]
            )
        )
        try check(response, data, what: "the customer search")
        return try decode(Page<Customer>.self, data, what: "/v1/customers").items
    }

    /// An existing customer with exactly this e-mail or phone (in E.164), as the server finds
    /// them; nil when none.
    public func existingCustomer(email: String?, phone: String?) async throws(SuiteClientError)
        -> Customer?
    {
        for text in [email, phone].compactMap({ $0 }) where !text.isEmpty {
            let found = try await customers(matching: text)
            if let match = found.first(where: { customer in
                (email.map { customer.email?.value.lowercased() == $0.lowercased() } ?? false)
                    || (phone.map { customer.phone?.e164 == $0 } ?? false)
            }) {
                return match
            }
        }
        return nil
    }
}
