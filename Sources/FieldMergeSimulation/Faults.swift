import FieldMerge
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeWorkload
import Synchronization

/// How often each fault strikes: per request for the transport's faults, per sync for a
/// crash, per device for a skewed clock.
public struct FaultRates: Sendable, Equatable {
    /// The request never reaches the server.
    public var dropRequest = 0.0
    /// The server commits, and its answer is lost (the retry must be replayed, not redone).
    public var dropResponse = 0.0
    /// The request reaches the server twice; the client gets the second answer.
    public var duplicate = 0.0
    /// The request is held for a few milliseconds.
    public var delay = 0.0
    /// One byte of the request or of the answer is flipped.
    public var corrupt = 0.0
    /// The device crashes at a random stage of applying a response, then reopens its file.
    public var crash = 0.0
    /// The share of devices whose clock is off by up to a year either way.
    public var skew = 0.0
    /// The server is closed and reopened from its file once, half way through the rounds.
    public var restart = false
    /// With live mode: a device's live connection is refused, or drops, losing the event it
    /// was about to deliver (per connection and per event).
    public var dropConnection = 0.0

    public init() {}

    /// No faults.
    public static let none = FaultRates()

    /// The rates `--faults` uses without a value.
    public static let standard: FaultRates = {
        var rates = FaultRates()
        (rates.dropRequest, rates.dropResponse, rates.duplicate, rates.delay) = (0.05, 0.05, 0.05, 0.05)
        (rates.corrupt, rates.crash, rates.skew, rates.restart) = (0.03, 0.05, 0.2, true)
        rates.dropConnection = 0.05
        return rates
    }()

    /// Whether any fault is on.
    public var isEnabled: Bool { self != .none }

    /// Parses `--faults`: empty, `on` or `standard` for ``standard``; one number for every
    /// rate (skew and restart as in ``standard``); or `key=rate` pairs separated by commas
    /// with the keys `drop`, `lose`, `dup`, `delay`, `corrupt`, `crash`, `skew`, `restart`
    /// (0 or 1), `disconnect`; keys not named are 0.
    public init(spec: String) throws {
        let spec = spec.trimmingCharacters(in: " ")
        if spec.isEmpty || spec == "on" || spec == "standard" { self = .standard; return }
        if let rate = Double(spec) {
            guard (0...1).contains(rate) else { throw SimulationError("--faults: a rate must be between 0 and 1") }
            self = .standard
            (dropRequest, dropResponse, duplicate, delay, corrupt, crash) = (rate, rate, rate, rate, rate, rate)
            dropConnection = rate
            return
        }
        self.init()
        for pair in spec.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: " ") }
            guard parts.count == 2, let rate = Double(parts[1]), (0...1).contains(rate) else {
                throw SimulationError("--faults: '\(pair)' is not key=rate with a rate between 0 and 1")
            }
            switch parts[0] {
            case "drop": dropRequest = rate
            case "lose": dropResponse = rate
            case "dup": duplicate = rate
            case "delay": delay = rate
            case "corrupt": corrupt = rate
            case "crash": crash = rate
            case "skew": skew = rate
            case "restart": restart = rate > 0
            case "disconnect": dropConnection = rate
            default:
                throw SimulationError("--faults: unknown fault '\(parts[0])' (drop, lose, dup, delay, corrupt, crash, skew, restart, disconnect)")
            }
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(self.drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}

/// The faults the report counts.
public enum FaultKind: String, Sendable, CaseIterable, Comparable {
    case dropRequest, dropResponse, duplicate, delay, corruptRequest, corruptResponse
    case crash, skewedClock, serverRestart, droppedConnection

    public static func < (a: FaultKind, b: FaultKind) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// Thread-safe counts of faults, injected and survived.
final class FaultLedger: Sendable {
    private let state = Mutex<(injected: [FaultKind: Int], survived: [FaultKind: Int])>(([:], [:]))

    func injected(_ kind: FaultKind, _ count: Int = 1) { state.withLock { $0.injected[kind, default: 0] += count } }
    func survived(_ kind: FaultKind, _ count: Int = 1) { state.withLock { $0.survived[kind, default: 0] += count } }
    var counts: (injected: [FaultKind: Int], survived: [FaultKind: Int]) { state.withLock { $0 } }
}

/// A transport that drops, duplicates, delays and corrupts what passes through it, from a
/// seeded generator (so a run is reproducible), and reports each fault to the device.
actor FaultyTransport: SyncTransport {
    private let inner: any SyncTransport
    private let rates: FaultRates
    private var random: SplitMix64
    /// Faults since the device last completed a sync: they count as survived when it does.
    private(set) var unresolved: [FaultKind] = []
    private let ledger: FaultLedger

    init(_ inner: any SyncTransport, rates: FaultRates, seed: UInt64, ledger: FaultLedger) {
        self.inner = inner
        self.rates = rates
        random = SplitMix64(seed: seed)
        self.ledger = ledger
    }

    private func strikes(_ rate: Double, _ kind: FaultKind) -> Bool {
        guard rate > 0, Double(random.next() >> 11) / Double(1 << 53) < rate else { return false }
        unresolved.append(kind)
        ledger.injected(kind)
        return true
    }

    /// Moves the faults since the last successful sync to the survived column.
    func resolve() -> [FaultKind] {
        defer { unresolved = [] }
        for kind in unresolved { ledger.survived(kind) }
        return unresolved
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        if strikes(rates.dropRequest, .dropRequest) { throw TransportError("simulated: the request was lost") }
        var body = body
        if strikes(rates.corrupt / 2, .corruptRequest) { corrupt(&body) }
        if strikes(rates.delay, .delay) { try await Task.sleep(for: .milliseconds(1 + Int(random.below(UInt64(3))))) }
        var answer = try await inner.send(body, gzip: gzip)
        if strikes(rates.duplicate, .duplicate) { answer = try await inner.send(body, gzip: gzip) }
        if strikes(rates.dropResponse, .dropResponse) { throw TransportError("simulated: the answer was lost after the server committed") }
        if strikes(rates.corrupt / 2, .corruptResponse) { corrupt(&answer) }
        return answer
    }

    /// Flips one bit of one byte past the gzip header (its CRC-32 must catch it).
    private func corrupt(_ bytes: inout [UInt8]) {
        guard bytes.count > 12 else { return }
        let position = 10 + Int(random.below(UInt64(bytes.count - 10)))
        bytes[position] ^= UInt8(1) << UInt8(random.below(UInt64(8)))
    }
}

/// Makes a device crash at one stage of applying a response: the simulation arms it before a
/// sync; the client's apply hook throws when the stage comes.
final class CrashSwitch: Sendable {
    private let armed = Mutex<ApplyStage?>(nil)
    private let fired = Mutex(false)
    private let ledger: FaultLedger

    init(ledger: FaultLedger) { self.ledger = ledger }

    func arm(_ stage: ApplyStage?) { armed.withLock { $0 = stage } }
    var isArmed: Bool { armed.withLock { $0 != nil } }

    /// Whether a crash fired since the last call (the store may have wrapped the error).
    func takeFired() -> Bool {
        fired.withLock { fired in
            defer { fired = false }
            return fired
        }
    }

    /// The hook to install in the client.
    var hook: @Sendable (ApplyStage) throws -> Void {
        { [self] stage in
            let crash = armed.withLock { armed -> Bool in
                guard armed == stage else { return false }
                armed = nil
                return true
            }
            if crash {
                ledger.injected(.crash)
                fired.withLock { $0 = true }
                throw SimulatedCrash(stage: stage)
            }
        }
    }
}

/// A device crash, thrown from inside the client while it applies a response.
struct SimulatedCrash: Error { var stage: ApplyStage }
