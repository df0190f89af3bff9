/// The stable identity of one replica (a device, a service, the server).
///
/// Replica ids break ties between stamps with equal clock values, so two replicas of one
/// data set must never share an id. Persist it with the replica's data.
public struct ReplicaID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64

    @inlinable
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    @inlinable
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    @inlinable
    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue, radix: 16) }
}

/// When and where a field was last edited: a hybrid-logical-clock value and a replica id.
///
/// Stamps are totally ordered, first by ``clock`` and then by ``replica``, so two different
/// edits never compare equal and no outcome depends on the order in which messages
/// arrive. The clock value packs 48 bits of wall-clock milliseconds above a 16-bit logical
/// counter (see ``HybridClock``).
///
/// ``Stamp/none`` (all zero) means "no stamp": a row written before stamps existed, or a
/// peer that does not send them. Merges compare values where a stamp is missing.
@frozen
public struct Stamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The packed hybrid-logical-clock value: milliseconds << 16 | counter.
    public var clock: UInt64
    /// The replica that made the edit.
    public var replica: ReplicaID

    @inlinable
    public init(clock: UInt64, replica: ReplicaID) {
        self.clock = clock
        self.replica = replica
    }

    /// Builds a stamp from wall-clock milliseconds and a logical counter.
    @inlinable
    public init(milliseconds: UInt64, counter: UInt16 = 0, replica: ReplicaID) {
        self.clock = (milliseconds & HybridClock.millisecondMask) << 16 | UInt64(counter)
        self.replica = replica
    }

    /// The absent stamp.
    public static let none = Stamp(clock: 0, replica: ReplicaID(0))

    /// Whether this is ``none``.
    @inlinable
    public var isNone: Bool { clock == 0 && replica.rawValue == 0 }

    /// The wall-clock milliseconds part of the clock value.
    @inlinable
    public var milliseconds: UInt64 { clock >> 16 }

    /// The logical counter part of the clock value.
    @inlinable
    public var counter: UInt16 { UInt16(truncatingIfNeeded: clock) }

    @inlinable
    public static func < (lhs: Stamp, rhs: Stamp) -> Bool {
        lhs.clock != rhs.clock ? lhs.clock < rhs.clock : lhs.replica.rawValue < rhs.replica.rawValue
    }

    /// This stamp with its clock value limited to `maximum`, keeping the replica.
    ///
    /// The server uses it to cap stamps from devices whose clock runs far ahead, so that
    /// such a device cannot win every conflict until the real time catches up.
    @inlinable
    public func clamped(toAtMost maximum: UInt64) -> Stamp {
        clock <= maximum ? self : Stamp(clock: maximum, replica: replica)
    }

    public var description: String {
        isNone ? "none" : "\(milliseconds).\(counter)@\(replica)"
    }
}
