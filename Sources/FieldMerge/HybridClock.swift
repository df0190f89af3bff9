import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A source of wall-clock time in milliseconds since the Unix epoch.
///
/// Inject one in tests to drive a ``HybridClock`` through skew and ties.
public protocol WallClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func milliseconds() -> UInt64
}

/// The system's real-time clock.
public struct SystemWallClock: WallClock {
    public init() {}

    public func milliseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let ms = Int64(spec.tv_sec) &* 1000 &+ Int64(spec.tv_nsec) / 1_000_000
        return ms < 0 ? 0 : UInt64(ms)
    }
}

/// A wall clock that returns whatever the test sets; safe to share between tasks.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
public final class ManualWallClock: WallClock {
    private let value: Atomic<UInt64>

    public init(milliseconds: UInt64) { value = Atomic(milliseconds) }

    public func milliseconds() -> UInt64 { value.load(ordering: .acquiring) }

    /// Sets the time.
    public func set(milliseconds: UInt64) { value.store(milliseconds, ordering: .releasing) }

    /// Moves the time forward, or back with a negative delta (never below zero).
    public func advance(by delta: Int64) {
        let now = Int64(clamping: value.load(ordering: .acquiring))
        value.store(UInt64(max(0, now &+ delta)), ordering: .releasing)
    }
}

/// What ``HybridClock/observe(_:)`` noticed about a received stamp.
public enum ClockObservation: Equatable, Sendable {
    /// The stamp was within the skew bound; the clock now runs past it.
    case accepted
    /// The stamp was further ahead of this replica's wall clock than the bound allows.
    /// It is still valid data, but the clock followed it only up to the bound.
    case aheadOfBound(byMilliseconds: UInt64)
}

/// A hybrid logical clock (Kulkarni et al., 2014) issuing ``Stamp``s for one replica.
///
/// The clock value packs 48 bits of milliseconds above a 16-bit counter. ``now()`` returns
/// a stamp larger than every stamp issued or observed before, close to the wall clock;
/// when the counter of one millisecond is used up it carries into the millisecond field,
/// borrowing one millisecond from the future rather than failing.
///
/// Skew: a stamp received from further than ``maxDrift`` milliseconds ahead of the wall
/// clock is reported and followed only up to that bound, so a replica's own clock never
/// runs more than the bound ahead of its wall clock because of someone else's clock. (Only
/// its own pace can: more than 65,536 stamps within one millisecond borrow from the next.)
public struct HybridClock: Sendable {
    /// The bits of a clock value that hold milliseconds, before shifting.
    public static let millisecondMask: UInt64 = (1 << 48) - 1

    /// The replica whose edits this clock stamps.
    public let replica: ReplicaID
    /// The largest clock value issued or observed so far; persist it with the replica.
    public private(set) var last: UInt64
    /// How far ahead of the wall clock, in milliseconds, the clock may be pushed.
    public var maxDrift: UInt64
    private let wall: any WallClock

    /// Creates a clock.
    ///
    /// - Parameters:
    ///   - replica: The replica the stamps are issued for.
    ///   - last: The clock value persisted from the previous run, or 0.
    ///   - maxDrift: The skew bound in milliseconds (default 60 s).
    ///   - wall: The wall clock; the system's real-time clock by default.
    public init(
        replica: ReplicaID, last: UInt64 = 0, maxDrift: UInt64 = 60_000,
        wall: any WallClock = SystemWallClock()
    ) {
        self.replica = replica
        self.last = last
        self.maxDrift = maxDrift
        self.wall = wall
    }

    /// A fresh stamp, larger than every stamp issued or observed before.
    public mutating func now() -> Stamp {
        let physical = (wall.milliseconds() & Self.millisecondMask) << 16
        // Beyond 2^64 the clock cannot move; 48-bit milliseconds last until the year 10889.
        last = physical > last ? physical : (last == .max ? last : last + 1)
        return Stamp(clock: last, replica: replica)
    }

    /// Advances the clock past a stamp received from another replica.
    ///
    /// - Returns: ``ClockObservation/aheadOfBound(byMilliseconds:)`` when the stamp lies
    ///   further ahead of the wall clock than ``maxDrift``; the clock then follows it only
    ///   up to the bound.
    @discardableResult
    public mutating func observe(_ stamp: Stamp) -> ClockObservation {
        let wallMs = wall.milliseconds() & Self.millisecondMask
        let boundMs = min(wallMs &+ maxDrift, Self.millisecondMask)
        // Follow at most to the bound's first tick, so that the next `now()` stays within it.
        let limit = boundMs << 16
        if stamp.clock > limit {
            if limit > last { last = limit }
            return .aheadOfBound(byMilliseconds: stamp.milliseconds - wallMs)
        }
        if stamp.clock > last { last = stamp.clock }
        return .accepted
    }

    /// The largest clock value a stamp may carry when it is received now: the wall clock
    /// plus the skew bound. The server clamps incoming stamps to it.
    public func acceptanceLimit() -> UInt64 {
        let wallMs = wall.milliseconds() & Self.millisecondMask
        return min(wallMs &+ maxDrift, Self.millisecondMask) << 16 | 0xFFFF
    }
}
