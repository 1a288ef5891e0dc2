internal import Foundation
internal import Logging
internal import NIOCore
internal import SQLKit
internal import Synchronization

/// Faults a test injects into a server's database: every statement whose SQL the rule selects
/// fails with ``InjectedFault`` as if the database could not be reached. Never set in
/// production (`StoreServerConfiguration` has no public way to set it).
final class InjectedFaults: Sendable {
    private let rule = Mutex<(@Sendable (String) -> Bool)?>(nil)

    init() {}

    /// Makes the statements `rule` selects fail (nil: none).
    func fail(when rule: (@Sendable (String) -> Bool)?) {
        self.rule.withLock { $0 = rule }
    }

    func fails(_ sql: String) -> Bool {
        rule.withLock { $0 }?(sql) ?? false
    }
}

/// The error of a statement an ``InjectedFaults`` rule selected.
struct InjectedFault: Error, CustomStringConvertible {
    var description: String { "injected fault: the database cannot be reached" }
}

/// A SQL database whose statements first pass an ``InjectedFaults`` rule.
struct FaultySQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    let faults: InjectedFaults

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
        -> EventLoopFuture<Void>
    {
        var serializer = SQLSerializer(database: base)
        query.serialize(to: &serializer)
        if faults.fails(serializer.sql) { return eventLoop.makeFailedFuture(InjectedFault()) }
        return base.execute(sql: query, onRow)
    }
}
