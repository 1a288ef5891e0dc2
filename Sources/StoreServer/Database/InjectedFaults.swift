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
    private let stallRule = Mutex<(@Sendable (String) -> Bool)?>(nil)

    init() {}

    /// Makes the statements `rule` selects fail (nil: none).
    func fail(when rule: (@Sendable (String) -> Bool)?) {
        self.rule.withLock { $0 = rule }
    }

    func fails(_ sql: String) -> Bool {
        rule.withLock { $0 }?(sql) ?? false
    }

    /// Makes the statements `rule` selects wait, as behind a database that has stopped
    /// answering, until the rule is lifted (nil: none; the waiting statements run then) or
    /// for ``stallTime``.
    func stall(when rule: (@Sendable (String) -> Bool)?) {
        stallRule.withLock { $0 = rule }
        if rule == nil {
            let waiting = stalled.withLock { stalled in
                defer { stalled.waiting.removeAll() }
                return Array(stalled.waiting.values)
            }
            for promise in waiting { promise.succeed() }
        }
    }

    func stalls(_ sql: String) -> Bool {
        stallRule.withLock { $0 }?(sql) ?? false
    }

    /// How long a stalled statement waits at most: longer than any limit the server puts on
    /// one.
    static let stallTime: TimeAmount = .seconds(20)

    /// The stalled statements' promises by number, and the next number.
    private let stalled = Mutex<(waiting: [Int: EventLoopPromise<Void>], next: Int)>(([:], 0))

    /// A future that completes when the stall is lifted or after ``stallTime``.
    func stallEnds(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        let id = stalled.withLock { stalled in
            stalled.next += 1
            stalled.waiting[stalled.next] = promise
            return stalled.next
        }
        eventLoop.scheduleTask(in: Self.stallTime) { [self] in
            stalled.withLock { $0.waiting.removeValue(forKey: id) }?.succeed()
        }
        return promise.futureResult
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
        if faults.stalls(serializer.sql) {
            let base = self.base
            return faults.stallEnds(on: eventLoop).flatMap { base.execute(sql: query, onRow) }
        }
        return base.execute(sql: query, onRow)
    }
}
