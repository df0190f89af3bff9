import FieldMergeServer
import Synchronization

/// Who each device is, as a token would say it: the simulation's identity provider. Each
/// client id (a device's replica in hex, or a name the simulation gives) belongs to a user;
/// each user has roles, which the simulation grants and revokes between rounds.
final class TeamDirectory: Sendable {
    private struct State {
        var users: [String: String] = [:]
        var roles: [String: Set<String>] = [:]
    }
    private let state = Mutex(State())

    /// The users, `u0` (an admin for the whole run) to `u<count - 1>`.
    static func users(_ count: Int) -> [String] { (0..<count).map { "u\($0)" } }

    /// Requests from `client` are made by `user`.
    func register(client: String, user: String) { state.withLock { $0.users[client] = user } }

    func setRoles(_ roles: Set<String>, of user: String) { state.withLock { $0.roles[user] = roles } }

    func roles(of user: String) -> Set<String> { state.withLock { $0.roles[user] ?? [] } }

    func user(of client: String?) -> String? {
        guard let client else { return nil }
        return state.withLock { $0.users[client] }
    }

    /// The identity of a request from `client`, its roles as they are now; nil for a client
    /// the simulation never registered (a request without one is anonymous).
    func identity(of client: String?) -> SyncIdentity? {
        guard let client else { return nil }
        return state.withLock { state in
            guard let user = state.users[client] else { return nil }
            return SyncIdentity(user: user, roles: state.roles[user] ?? [])
        }
    }
}
