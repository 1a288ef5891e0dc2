internal import Synchronization

/// Runs one operation per key however many callers ask for it at once: the first caller
/// starts a job, later ones join it, all get its result. A caller that cancels leaves the job
/// (getting `cancelled`); the job's task is cancelled only when the last caller leaves. The
/// job runs at the highest priority of the callers still waiting.
final class TaskCoalescer<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Operation = @Sendable (CoalescedJob<Value>) async throws(ImageCacheError) -> Value

    private let jobs = Mutex<[Key: CoalescedJob<Value>]>([:])

    /// Joins the running job for `key`, or starts one with `operation`.
    func subscribe(
        _ key: Key,
        priority: ImageRequest.Priority,
        label: String,
        operation: @escaping Operation
    ) -> Subscription<Value> {
        let (job, id, isNew) = jobs.withLock { jobs -> (CoalescedJob<Value>, Int, Bool) in
            if let job = jobs[key], let id = job.addWaiter(priority: priority) {
                return (job, id, false)
            }
            let job = CoalescedJob<Value>(label: label, priority: priority)
            let id = job.addWaiter(priority: priority)!
            jobs[key] = job
            return (job, id, true)
        }
        if isNew {
            job.start(
                operation: operation,
                detach: { [weak self, weak job] in
                    guard let self, let job else { return }
                    self.jobs.withLock { jobs in
                        if jobs[key] === job { jobs[key] = nil }
                    }
                }
            )
        }
        return Subscription(job: job, id: id)
    }

    /// Jobs running now (for tests and statistics).
    var runningCount: Int { jobs.withLock { $0.count } }

    /// The priority of the job running for `key`, if any.
    func priority(of key: Key) -> ImageRequest.Priority? {
        jobs.withLock { $0[key] }?.priority
    }
}

/// One caller's place in a job.
struct Subscription<Value: Sendable>: Sendable {
    let job: CoalescedJob<Value>
    let id: Int

    /// The job's result; `cancelled` at once if the calling task is cancelled.
    func value() async throws(ImageCacheError) -> Value {
        try await job.wait(id).get()
    }

    /// Changes this caller's priority (a nested job following its parent's).
    func setPriority(_ priority: ImageRequest.Priority) {
        job.setPriority(priority, forWaiter: id)
    }
}

/// A job shared by the callers of one key.
final class CoalescedJob<Value: Sendable>: Sendable {
    typealias Outcome = Result<Value, ImageCacheError>

    private struct Waiter {
        var priority: ImageRequest.Priority
        var continuation: CheckedContinuation<Outcome, Never>?
    }

    private struct State {
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var outcome: Outcome?
        var abandoned = false
        var task: Task<Void, Never>?
        var detach: (@Sendable () -> Void)?
        var priority: ImageRequest.Priority
        var observers: [@Sendable (ImageRequest.Priority) -> Void] = []
    }

    private let state: Mutex<State>
    let label: String

    init(label: String, priority: ImageRequest.Priority) {
        self.label = label
        state = Mutex(State(priority: priority))
    }

    /// The highest priority among the waiting callers.
    var priority: ImageRequest.Priority { state.withLock { $0.priority } }

    /// Calls `observer` whenever ``priority`` changes (from the job's own task).
    func onPriorityChange(_ observer: @escaping @Sendable (ImageRequest.Priority) -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Adds a caller; nil when the job already ended or was abandoned.
    func addWaiter(priority: ImageRequest.Priority) -> Int? {
        let (id, change) = state.withLock { state -> (Int?, PriorityChange?) in
            guard state.outcome == nil, !state.abandoned else { return (nil, nil) }
            let id = state.nextID
            state.nextID += 1
            state.waiters[id] = Waiter(priority: priority)
            return (id, Self.recomputePriority(&state))
        }
        change?.notify()
        return id
    }

    func setPriority(_ priority: ImageRequest.Priority, forWaiter id: Int) {
        let change = state.withLock { state -> PriorityChange? in
            guard state.waiters[id] != nil else { return nil }
            state.waiters[id]?.priority = priority
            return Self.recomputePriority(&state)
        }
        change?.notify()
    }

    private struct PriorityChange {
        var priority: ImageRequest.Priority
        var raised: Bool
        var observers: [@Sendable (ImageRequest.Priority) -> Void]
        var task: Task<Void, Never>?

        func notify() {
            if raised, let task {
                if #available(macOS 26.0, iOS 26.0, *) {
                    task.escalatePriority(to: priority.taskPriority)
                }
            }
            for observer in observers { observer(priority) }
        }
    }

    private static func recomputePriority(_ state: inout State) -> PriorityChange? {
        guard let highest = state.waiters.values.map(\.priority).max(), highest != state.priority
        else { return nil }
        let raised = highest > state.priority
        state.priority = highest
        return PriorityChange(
            priority: highest,
            raised: raised,
            observers: state.observers,
            task: state.task
        )
    }

    func start(
        operation: @escaping @Sendable (CoalescedJob<Value>) async throws(ImageCacheError) -> Value,
        detach: @escaping @Sendable () -> Void
    ) {
        let priority = state.withLock { state in
            state.detach = detach
            return state.priority
        }
        let task = Task(priority: priority.taskPriority) {
            let outcome: Outcome
            do throws(ImageCacheError) {
                outcome = .success(try await operation(self))
            } catch {
                outcome = .failure(error)
            }
            self.finish(outcome)
        }
        let cancelNow = state.withLock { state in
            state.task = task
            return state.abandoned
        }
        if cancelNow { task.cancel() }
    }

    private func finish(_ outcome: Outcome) {
        let (waiters, detach) = state.withLock { state in
            state.outcome = outcome
            let waiters = state.waiters
            state.waiters = [:]
            state.observers = []
            return (waiters, state.detach)
        }
        detach?()
        for waiter in waiters.values { waiter.continuation?.resume(returning: outcome) }
    }

    func wait(_ id: Int) async -> Outcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let immediate = state.withLock { state -> Outcome? in
                    if let outcome = state.outcome { return outcome }
                    guard state.waiters[id] != nil else {
                        return .failure(.cancelled(label))
                    }
                    state.waiters[id]?.continuation = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            leave(id)
        }
    }

    /// A caller cancelled: it gets `cancelled`; the last one out cancels the job's task.
    private func leave(_ id: Int) {
        let (continuation, abandonedTask, detach, change) = state.withLock {
            state -> (
                CheckedContinuation<Outcome, Never>?, Task<Void, Never>?, (@Sendable () -> Void)?,
                PriorityChange?
            ) in
            guard state.outcome == nil, let waiter = state.waiters.removeValue(forKey: id) else {
                return (nil, nil, nil, nil)
            }
            if state.waiters.isEmpty {
                state.abandoned = true
                return (waiter.continuation, state.task, state.detach, nil)
            }
            return (waiter.continuation, nil, nil, Self.recomputePriority(&state))
        }
        continuation?.resume(returning: .failure(.cancelled(label)))
        change?.notify()
        if let abandonedTask {
            abandonedTask.cancel()
        }
        detach?()
    }
}

extension ImageRequest.Priority {
    var taskPriority: TaskPriority {
        switch self {
        case .veryLow: .background
        case .low: .utility
        case .normal: .medium
        case .high, .veryHigh: .high
        }
    }
}

/// At most `limit` downloads at once; waiting ones start by priority, then in order of
/// arrival. A ticket's priority can change while it waits; a cancelled ticket leaves the
/// queue.
final class DownloadQueue: Sendable {
    private struct Ticket {
        var priority: ImageRequest.Priority
        var sequence: Int
        var granted = false
        var cancelled = false
        var continuation: CheckedContinuation<Bool, Never>?
    }

    private struct State {
        var running = 0
        var tickets: [Int: Ticket] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Queues a ticket (granting it at once when a slot is free).
    func makeTicket(priority: ImageRequest.Priority) -> Int {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            var ticket = Ticket(priority: priority, sequence: id)
            if state.running < limit {
                ticket.granted = true
                state.running += 1
            }
            state.tickets[id] = ticket
            return id
        }
    }

    /// Waits until the ticket is granted; false when the task was cancelled first. After
    /// true, the caller must call ``release()`` once.
    func wait(_ id: Int) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate = state.withLock { state -> Bool? in
                    guard let ticket = state.tickets[id] else { return false }
                    if ticket.cancelled || ticket.granted {
                        state.tickets[id] = nil
                        return ticket.granted
                    }
                    state.tickets[id]?.continuation = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    func setPriority(_ id: Int, _ priority: ImageRequest.Priority) {
        state.withLock { $0.tickets[id]?.priority = priority }
    }

    /// Frees a slot and grants the best waiting ticket.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.running -= 1
            return Self.grantNext(&state)
        }
        next?.resume(returning: true)
    }

    private func cancel(_ id: Int) {
        let (own, next) = state.withLock {
            state -> (CheckedContinuation<Bool, Never>?, CheckedContinuation<Bool, Never>?) in
            guard var ticket = state.tickets[id] else { return (nil, nil) }
            var next: CheckedContinuation<Bool, Never>?
            if ticket.granted {
                // Granted but not yet taken: hand the slot on.
                ticket.granted = false
                state.running -= 1
                state.tickets[id] = nil
                next = Self.grantNext(&state)
            }
            ticket.cancelled = true
            if let continuation = ticket.continuation {
                state.tickets[id] = nil
                return (continuation, next)
            }
            state.tickets[id] = ticket
            return (nil, next)
        }
        own?.resume(returning: false)
        next?.resume(returning: true)
    }

    private static func grantNext(_ state: inout State) -> CheckedContinuation<Bool, Never>? {
        var best: (id: Int, ticket: Ticket)?
        for (id, ticket) in state.tickets where !ticket.granted && !ticket.cancelled {
            if let current = best {
                if ticket.priority > current.ticket.priority
                    || (ticket.priority == current.ticket.priority
                        && ticket.sequence < current.ticket.sequence)
                {
                    best = (id, ticket)
                }
            } else {
                best = (id, ticket)
            }
        }
        guard let (id, ticket) = best else { return nil }
        state.running += 1
        if let continuation = ticket.continuation {
            state.tickets[id] = nil
            return continuation
        }
        state.tickets[id]?.granted = true
        return nil
    }

    /// Downloads running now.
    var running: Int { state.withLock { $0.running } }

    /// Tickets waiting for a slot.
    var waiting: Int {
        state.withLock { state in state.tickets.values.filter { !$0.granted && !$0.cancelled }.count
        }
    }
}
