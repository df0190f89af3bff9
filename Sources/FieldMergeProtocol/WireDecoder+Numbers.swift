/// Numbers, read straight from the bytes: integers without any String, reals by an exact
/// fast path (at most 19 significant digits, mantissa ≤ 2^53, power of ten ≤ 10^22: one
/// correctly rounded IEEE multiplication or division, Clinger's fast path), falling back to
/// the standard library's correctly rounded `Double(String)` for the rest.
extension _Parser {
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- 48 < 10 }

    /// The value of eight ASCII digits loaded little-endian (first digit most significant),
    /// or nil when any byte is not a digit.
    @inline(__always)
    static func eightDigits(_ word: UInt64) -> UInt64? {
        let low = word &- 0x3030_3030_3030_3030
        // Every byte must be 0x30...0x39: subtracting '0' leaves 0...9, and adding 6 keeps
        // each byte below 0x10.
        guard (word & 0xF0F0_F0F0_F0F0_F0F0) == 0x3030_3030_3030_3030,
            ((low &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) == 0
        else { return nil }
        var value = (low &* 10 &+ (low >> 8)) & 0x00FF_00FF_00FF_00FF
        value = (value &* 100 &+ (value >> 16)) & 0x0000_FFFF_0000_FFFF
        value = (value &* 10_000 &+ (value >> 32)) & 0xFFFF_FFFF
        return value
    }

    /// Reads the integer part of a number at `position`: its sign and magnitude, and whether
    /// the magnitude exceeds UInt64. A fraction or exponent makes it `unexpectedType`.
    @inline(__always)
    mutating func integerParts(_ what: String) throws(WireError) -> (negative: Bool, magnitude: UInt64, overflow: Bool) {
        let start = position
        var index = position
        let negative = input[index] == UInt8(ascii: "-")
        if negative { index &+= 1 }
        guard index < end else { position = end; throw truncated() }
        guard Self.isDigit(input[index]) else {
            position = index
            throw unexpectedCharacter(expecting: "a digit")
        }
        var magnitude: UInt64 = 0
        var overflow = false
        if input[index] == UInt8(ascii: "0") {
            index &+= 1
        } else {
            let digitsStart = index
            // Eight digits at a time while they fit in the first 16 (no overflow possible).
            while index &+ 8 <= end, index &- digitsStart <= 8,
                let eight = Self.eightDigits(UnsafeRawPointer(input + index).loadUnaligned(as: UInt64.self))
            {
                magnitude = magnitude &* 100_000_000 &+ eight
                index &+= 8
            }
            while index < end, Self.isDigit(input[index]) {
                let digit = UInt64(input[index] &- 48)
                if index &- digitsStart < 19 {
                    magnitude = magnitude &* 10 &+ digit
                } else {
                    let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (plus, o2) = times.addingReportingOverflow(digit)
                    overflow = overflow || o1 || o2
                    magnitude = plus
                }
                index &+= 1
            }
        }
        if index < end {
            let byte = input[index]
            if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || Self.isDigit(byte) {
                position = start
                _ = try scanNumber()
                throw error(.unexpectedType, "expected \(what), got a number with a fraction or exponent", at: start)
            }
        }
        position = index
        return (negative, magnitude, overflow)
    }

    /// A signed 64-bit integer at `position` (after whitespace).
    @inline(__always)
    mutating func int64(_ what: String) throws(WireError) -> Int64 {
        let byte = try peek()
        guard byte == UInt8(ascii: "-") || Self.isDigit(byte) else { throw typeError(expected: what) }
        let start = position
        let (negative, magnitude, overflow) = try integerParts(what)
        if negative {
            guard !overflow, magnitude <= UInt64(Int64.max) + 1 else {
                throw error(.outOfRange, "\(what) below Int64.min", at: start)
            }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        guard !overflow, magnitude <= UInt64(Int64.max) else {
            throw error(.outOfRange, "\(what) above Int64.max", at: start)
        }
        return Int64(magnitude)
    }

    /// A non-negative 64-bit integer (revisions).
    @inline(__always)
    mutating func nonNegativeInt64(_ what: String) throws(WireError) -> Int64 {
        skipSpace()
        let start = position
        let value = try int64(what)
        guard value >= 0 else { throw error(.outOfRange, "\(what) must not be negative", at: start) }
        return value
    }

    /// An unsigned 64-bit integer: a JSON integer, or a string of decimal digits (stamps).
    @inline(__always)
    mutating func uint64(_ what: String) throws(WireError) -> UInt64 {
        let byte = try peek()
        guard Self.isDigit(byte) else { return try uint64Slow(what) }
        let start = position
        let (_, magnitude, overflow) = try integerParts(what)
        guard !overflow else { throw error(.outOfRange, "\(what) above UInt64.max", at: start) }
        return magnitude
    }

    /// An unsigned integer as a string of digits, a negative number, or no number.
    @inline(never)
    private mutating func uint64Slow(_ what: String) throws(WireError) -> UInt64 {
        let start = position
        if input[position] == UInt8(ascii: "\"") {
            let digits = try string()
            guard digits.count > 0 else {
                throw error(.invalidValue, "expected \(what) as a string of decimal digits", at: start)
            }
            var value: UInt64 = 0
            for digit in digits.buffer {
                guard Self.isDigit(digit) else {
                    throw error(.invalidValue, "expected \(what) as a string of decimal digits", at: start)
                }
                let (times, o1) = value.multipliedReportingOverflow(by: 10)
                let (plus, o2) = times.addingReportingOverflow(UInt64(digit &- 48))
                guard !o1, !o2 else { throw error(.outOfRange, "\(what) above UInt64.max", at: start) }
                value = plus
            }
            return value
        }
        guard input[position] == UInt8(ascii: "-") else { throw typeError(expected: what) }
        let (_, magnitude, overflow) = try integerParts(what)
        guard !overflow, magnitude == 0 else { throw error(.outOfRange, "\(what) must not be negative", at: start) }
        return 0
    }

    /// A real: any JSON number.
    @inline(__always)
    mutating func double(_ what: String) throws(WireError) -> Double {
        let byte = try peek()
        guard byte == UInt8(ascii: "-") || Self.isDigit(byte) else { throw typeError(expected: what) }
        let start = position
        let number = try scanNumber()
        if number.exact, number.mantissa <= 1 << 53, number.exponent >= -22, number.exponent <= 22 {
            var value = Double(number.mantissa)
            value = number.exponent < 0 ? value / _powersOfTen[-number.exponent] : value * _powersOfTen[number.exponent]
            return number.negative ? -value : value
        }
        if number.exact, number.mantissa == 0 { return number.negative ? -0.0 : 0.0 }
        let text = String(decoding: UnsafeBufferPointer(start: input + start, count: position - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw error(.outOfRange, "\(what) beyond the range of a 64-bit real", at: start)
        }
        return value
    }

    /// Checks the syntax of a JSON number at `position` and moves past it. Returns its
    /// decimal mantissa (first 19 significant digits) and exponent; `exact` when no
    /// significant digit was dropped and the exponent is small.
    mutating func scanNumber() throws(WireError) -> (negative: Bool, mantissa: UInt64, exponent: Int, exact: Bool) {
        var index = position
        let negative = input[index] == UInt8(ascii: "-")
        if negative { index &+= 1 }
        var mantissa: UInt64 = 0
        var significant = 0
        var dropped = false
        var exponent = 0
        func fail(_ message: String, _ at: Int) -> WireError {
            at >= end ? truncated() : error(.malformedJSON, message, at: at)
        }
        guard index < end, Self.isDigit(input[index]) else { throw fail("expected a digit", index) }
        if input[index] == UInt8(ascii: "0") {
            index &+= 1
            if index < end, Self.isDigit(input[index]) { throw fail("a number may not start with 0", index - 1) }
        } else {
            while index < end, Self.isDigit(input[index]) {
                if significant < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(input[index] &- 48)
                    significant &+= 1
                } else {
                    dropped = dropped || input[index] != UInt8(ascii: "0")
                    exponent &+= 1
                }
                index &+= 1
            }
        }
        if index < end, input[index] == UInt8(ascii: ".") {
            index &+= 1
            guard index < end, Self.isDigit(input[index]) else { throw fail("expected a digit after '.'", index) }
            while index < end, Self.isDigit(input[index]) {
                if significant < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(input[index] &- 48)
                    if mantissa != 0 { significant &+= 1 }
                    exponent &-= 1
                } else {
                    dropped = dropped || input[index] != UInt8(ascii: "0")
                }
                index &+= 1
            }
        }
        if index < end, input[index] == UInt8(ascii: "e") || input[index] == UInt8(ascii: "E") {
            index &+= 1
            var exponentNegative = false
            if index < end, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") {
                exponentNegative = input[index] == UInt8(ascii: "-")
                index &+= 1
            }
            guard index < end, Self.isDigit(input[index]) else { throw fail("expected a digit in the exponent", index) }
            var written = 0
            while index < end, Self.isDigit(input[index]) {
                if written < 100_000 { written = written &* 10 &+ Int(input[index] &- 48) }
                index &+= 1
            }
            exponent &+= exponentNegative ? -written : written
        }
        position = index
        return (negative, mantissa, exponent, !dropped && exponent > -400 && exponent < 400)
    }
}

/// 10^0 ... 10^22, each exactly representable as a Double.
let _powersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]
