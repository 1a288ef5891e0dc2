public import Foundation
import Synchronization

/// One key's change in a suite, seen by ``SharedStore/changes(forKey:)`` and
/// ``SharedStore/observe(key:handler:)``.
public struct DefaultsChange: Sendable, Hashable {
    /// The suite the key belongs to.
    public var suite: String
    /// The key that changed.
    public var key: String
    /// The stored value before the change; `nil` when the key was absent.
    public var oldValue: DefaultsValue?
    /// The stored value after the change; `nil` when the key was removed.
    public var newValue: DefaultsValue?
    /// When this process saw the change.
    public var date: Date

    /// Creates a change.
    public init(
        suite: String,
        key: String,
        oldValue: DefaultsValue?,
        newValue: DefaultsValue?,
        date: Date
    ) {
        self.suite = suite
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.date = date
    }
}

/// A registered change handler; it stays active until ``cancel()`` or until it is released.
public final class DefaultsObservation: Sendable {
    private let cancelAction: Mutex<(@Sendable () -> Void)?>

    init(cancel: @escaping @Sendable () -> Void) {
        cancelAction = Mutex(cancel)
    }

    /// Stops delivering changes to the handler; idempotent.
    public func cancel() {
        let action = cancelAction.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { cancel() }
}
