internal import CStartup

/// SIGHUP as "reload your files" for a long-running command (`store-server serve` reloads its
/// TLS certificate), read by ``StopSignal``'s watcher thread: the signal handler only writes a
/// byte to the self-pipe, and the actions run on that thread, never in the handler.
///
/// Only a command that registers an action catches SIGHUP; in every other app it keeps its
/// default action (a client whose terminal hangs up ends). SIGHUPs after the first stop signal
/// are ignored.
public enum ReloadSignal {
    /// Runs `action` on every SIGHUP from now on. Keep it short (start a task for slow work):
    /// it runs on the signal watcher thread.
    /// - Returns: false when the handler could not be installed.
    @discardableResult
    public static func onReload(_ action: @escaping @Sendable () -> Void) -> Bool {
        StopSignal.addReloadAction(action)
    }
}
