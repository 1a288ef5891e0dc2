internal import Foundation
internal import Models

/// Customers: listing, search, and new customers checked against the configured form.
struct CustomerService: Sendable {
    let repository: Repository
    let config: ConfigService

    /// A page of customers, optionally matching `text` (name, e-mail or phone).
    func customers(matching text: String?, _ page: PageRequest) async throws -> Page<Customer> {
        try await repository.customers(query: text, page)
    }

    /// The customer `id`.
    /// - Throws: a 404 when there is none.
    func customer(id: UUID) async throws -> Customer {
        guard let customer = try await repository.customer(id: id) else {
            throw APIError.notFound("customer \(id.uuidString) does not exist")
        }
        return customer
    }

    /// Creates a customer from form values (the store's form when `storeID` is given).
    /// - Throws: a 422 naming each field that breaks the form, or an unknown store.
    func create(_ new: NewCustomer, now: Date = Date()) async throws -> Customer {
        var store: Store?
        if let storeID = new.storeID {
            guard let found = try await repository.store(id: storeID) else {
                throw APIError.unknownValue("storeID", "store \(storeID.uuidString) does not exist")
            }
            store = found
        }
        let form = try await newCustomer(
            from: new.fields,
            store: store,
            now: now,
            prefix: "fields."
        )
        try await Repository.insert(form.customer, formValues: form.values, on: repository.sql)
        return form.customer
    }

    /// A new customer and its cleaned form values, checked against the configured form.
    /// - Parameter prefix: put before each field name in errors (`customer.`, `fields.`).
    /// - Throws: a 422 naming every field that breaks the form.
    func newCustomer(from values: [String: String], store: Store?, now: Date, prefix: String)
        async throws -> (customer: Customer, values: [String: String])
    {
        let configuration: ClientConfiguration
        do {
            configuration = try await config.current().configuration(for: "*")
        } catch let error as ValidationError {
            throw APIError.unavailable("the stored customer form is invalid: \(error)")
        }
        let callingCode = store.flatMap { PhoneNumber.callingCode(forRegion: $0.market) }
        let validation = configuration.validate(form: values, defaultCallingCode: callingCode)
        guard validation.isValid else {
            throw APIError.validation(
                validation.errors.map {
                    APIProblem.FieldError(
                        field: prefix + $0.field,
                        code: $0.code.rawValue,
                        message: $0.message
                    )
                }
            )
        }
        let cleaned = validation.values
        do {
            let customer = try Customer(
                givenName: cleaned["givenName"] ?? "",
                familyName: cleaned["familyName"] ?? "",
                email: try cleaned["email"].map { try EmailAddress($0) },
                phone: try cleaned["phone"].map {
                    try PhoneNumber($0, defaultCallingCode: callingCode)
                },
                note: cleaned["note"],
                createdAt: now
            )
            return (customer, cleaned)
        } catch {
            var field =
                ValidationError(error).map { APIProblem.FieldError($0) }
                ?? APIProblem.FieldError(field: "", code: "invalidFormat", message: "\(error)")
            field.field = prefix + field.field
            throw APIError.validation([field])
        }
    }
}
