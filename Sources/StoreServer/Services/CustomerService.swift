internal import Foundation
internal import Models

/// Customers: listing, search, and new customers checked against the configured form.
struct CustomerService: Sendable {
    let repository: Repository
    let config: ConfigService

    /// A page of the caller's customers matching `text` (name, e-mail or phone), of one store
    /// (`store`: its id or short name), or both.
    /// - Throws: a 400 when neither is given, a 404 for a store outside the caller's.
    func customers(
        matching text: String?,
        store reference: String?,
        _ page: PageRequest,
        for caller: SignedIn
    ) async throws -> Page<Customer> {
        guard (text.map { !$0.isEmpty } ?? false) || reference != nil else {
            throw APIError.badRequest(
                "give query parameter 'query' (a name, e-mail or phone) or 'store' to list customers"
            )
        }
        var store: UUID?
        if let reference {
            guard let found = try await repository.store(reference: reference, scope: caller.scope)
            else { throw APIError.notFound("store \(reference.prefix(64)) does not exist") }
            store = found.id
        }
        return try await repository.customers(query: text, store: store, page, scope: caller.scope)
    }

    /// The customer `id`.
    /// - Throws: a 404 when there is none among the caller's stores' customers.
    func customer(id: UUID, for caller: SignedIn) async throws -> Customer {
        guard let customer = try await repository.customer(id: id, scope: caller.scope) else {
            throw APIError.notFound("customer \(id.uuidString) does not exist")
        }
        return customer
    }

    /// Creates a customer from form values for `storeID` (the caller's home store when absent;
    /// only an admin may create one for no store).
    /// - Throws: a 422 naming each field that breaks the form, or a store that is unknown or
    ///   not the caller's.
    func create(_ new: NewCustomer, for caller: SignedIn, now: Date = Date()) async throws
        -> Customer
    {
        var store: Store?
        if let storeID = new.storeID ?? caller.access.homeStoreID {
            guard let found = try await repository.store(id: storeID, scope: caller.scope) else {
                throw APIError.unknownValue("storeID", "store \(storeID.uuidString) does not exist")
            }
            store = found
        } else if !caller.scope.isEveryStore {
            throw APIError.validation([
                APIProblem.FieldError(
                    field: "storeID",
                    code: "missing",
                    message: "storeID is missing (the store the customer is created for)"
                )
            ])
        }
        let form = try await newCustomer(
            from: new.fields,
            store: store,
            now: now,
            prefix: "fields."
        )
        try await Repository.insert(
            form.customer,
            formValues: form.values,
            store: store?.id,
            on: repository.sql
        )
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
