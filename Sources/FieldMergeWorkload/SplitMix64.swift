/// The SplitMix64 generator of the benchmark workload (Specs/benchmarks.md, "The workload").
///
/// All arithmetic is unsigned 64-bit and wrapping, so any port reproduces the same stream.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    @usableFromInline var _state: UInt64

    /// The current state; the next output is derived from `state &+ 0x9E3779B97F4A7C15`.
    public var state: UInt64 { _state }

    /// Creates a generator whose state starts at `seed`.
    @inlinable
    public init(seed: UInt64) {
        self._state = seed
    }

    /// Advances the state and returns the next 64-bit output.
    @inlinable
    public mutating func next() -> UInt64 {
        _state = _state &+ 0x9E37_79B9_7F4A_7C15
        var z = _state
        z = (z ^ (z &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z &>> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z &>> 31)
    }

    /// Returns `next() % n` (as Specs/benchmarks.md defines it, modulo bias included).
    ///
    /// - Precondition: `n > 0`.
    @inlinable
    public mutating func below(_ n: UInt64) -> UInt64 {
        precondition(n > 0, "below(0)")
        return next() % n
    }

    /// A value in `0..<bound` (`next() % bound`), for `Int` counts.
    ///
    /// - Precondition: `bound > 0`.
    @inlinable
    public mutating func below(_ bound: Int) -> Int {
        Int(below(UInt64(bound)))
    }
}
