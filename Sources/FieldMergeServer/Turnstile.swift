/// Lets one task at a time through, in arrival order; for an actor whose work suspends
/// (actors are reentrant at every `await`). Used only from its owner's actor.
final class Turnstile {
    private var occupied = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Waits until no other task is inside, then goes in.
    func enter(isolation: isolated (any Actor)? = #isolation) async {
        guard occupied else {
            occupied = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Lets the next waiting task in (it stays occupied), or leaves it free.
    func leave() {
        if waiting.isEmpty { occupied = false } else { waiting.removeFirst().resume() }
    }
}
