/// Dates on the wire: the case study's `"2014-02-01 13:15:23.487+01"`.
///
/// Written always in UTC with milliseconds, `"2014-02-01 12:15:23.487+00"`. Years outside
/// 0...9999 (a date value covers ±292 million years) are written with a leading `-` and
/// at least four digits, or with as many digits as they need, so every value round-trips.
/// Read: `YYYY-MM-DD`, a space or `T`, `HH:MM:SS`, an optional `.` and 1–3 fraction digits,
/// then `Z`, `±HH` or `±HH:MM` (a time without an offset is refused rather than guessed).
/// The civil-calendar arithmetic is the proleptic Gregorian calendar of Howard Hinnant's
/// `days_from_civil` / `civil_from_days`, with no Foundation and no time-zone database.
enum _WireDate {
    static let millisecondsPerDay: Int64 = 86_400_000

    /// Days since 1970-01-01 of a civil date.
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day count since 1970-01-01.
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func isLeap(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Writes `milliseconds` since 1970 as a quoted UTC date string.
    static func write(_ milliseconds: Int64, to writer: inout _Writer) {
        var days = milliseconds / millisecondsPerDay
        var rest = milliseconds % millisecondsPerDay
        if rest < 0 { days -= 1; rest += millisecondsPerDay }
        let (year, month, day) = civil(days: days)
        writer.reserve(48)
        writer.reservedByte(UInt8(ascii: "\""))
        if year < 0 { writer.reservedByte(UInt8(ascii: "-")) }
        let magnitude = year.magnitude
        for _ in 0..<max(0, 4 - decimalLength(magnitude)) { writer.reservedByte(UInt8(ascii: "0")) }
        writer.reservedUnsigned(magnitude)
        func two(_ value: Int64, after separator: UInt8) {
            writer.reservedByte(separator)
            writer.reservedByte(UInt8(truncatingIfNeeded: value / 10) + 48)
            writer.reservedByte(UInt8(truncatingIfNeeded: value % 10) + 48)
        }
        two(month, after: UInt8(ascii: "-"))
        two(day, after: UInt8(ascii: "-"))
        two(rest / 3_600_000, after: UInt8(ascii: " "))
        two(rest / 60_000 % 60, after: UInt8(ascii: ":"))
        two(rest / 1000 % 60, after: UInt8(ascii: ":"))
        let millis = rest % 1000
        writer.reservedByte(UInt8(ascii: "."))
        writer.reservedByte(UInt8(truncatingIfNeeded: millis / 100) + 48)
        writer.reservedByte(UInt8(truncatingIfNeeded: millis / 10 % 10) + 48)
        writer.reservedByte(UInt8(truncatingIfNeeded: millis % 10) + 48)
        writer.reservedByte(UInt8(ascii: "+"))
        writer.reservedByte(UInt8(ascii: "0"))
        writer.reservedByte(UInt8(ascii: "0"))
        writer.reservedByte(UInt8(ascii: "\""))
    }

    /// Why a date string was refused: a message, and the failing byte within the string.
    struct Failure: Error {
        var message: String
        var position: Int
        var outOfRange = false
    }

    /// Milliseconds since 1970 of a date string's content (without quotes).
    static func parse(_ text: UnsafeBufferPointer<UInt8>) throws(Failure) -> Int64 {
        var index = 0
        let count = text.count
        func digits(_ length: Int, _ what: String) throws(Failure) -> Int64 {
            var value: Int64 = 0
            for _ in 0..<length {
                guard index < count, text[index] >= 48, text[index] <= 57 else {
                    throw Failure(message: "expected \(length) digits of the \(what)", position: index)
                }
                value = value * 10 + Int64(text[index] - 48)
                index += 1
            }
            return value
        }
        func expect(_ byte: UInt8, _ what: String) throws(Failure) {
            guard index < count, text[index] == byte else {
                throw Failure(message: "expected \(what)", position: index)
            }
            index += 1
        }
        func range(_ value: Int64, _ bounds: ClosedRange<Int64>, _ what: String, at position: Int) throws(Failure) {
            guard bounds.contains(value) else {
                throw Failure(message: "\(what) \(value) outside \(bounds.lowerBound)...\(bounds.upperBound)", position: position)
            }
        }

        // Year: an optional sign, then at least four digits (at most 9).
        var negative = false
        if index < count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
            negative = text[index] == UInt8(ascii: "-")
            index += 1
        }
        var yearDigits = 0
        while index + yearDigits < count, text[index + yearDigits] >= 48, text[index + yearDigits] <= 57 { yearDigits += 1 }
        guard yearDigits >= 4 else { throw Failure(message: "expected a year of at least 4 digits", position: index) }
        guard yearDigits <= 9 else { throw Failure(message: "year out of range", position: index, outOfRange: true) }
        let yearMagnitude = try digits(yearDigits, "year")
        let year = negative ? -yearMagnitude : yearMagnitude
        try expect(UInt8(ascii: "-"), "'-' after the year")
        let monthAt = index
        let month = try digits(2, "month")
        try range(month, 1...12, "month", at: monthAt)
        try expect(UInt8(ascii: "-"), "'-' after the month")
        let dayAt = index
        let day = try digits(2, "day")
        try range(day, 1...daysInMonth(year, month), "day", at: dayAt)
        guard index < count, text[index] == UInt8(ascii: " ") || text[index] == UInt8(ascii: "T") else {
            throw Failure(message: "expected ' ' or 'T' between date and time", position: index)
        }
        index += 1
        let hourAt = index
        let hour = try digits(2, "hour")
        try range(hour, 0...23, "hour", at: hourAt)
        try expect(UInt8(ascii: ":"), "':' after the hour")
        let minuteAt = index
        let minute = try digits(2, "minute")
        try range(minute, 0...59, "minute", at: minuteAt)
        try expect(UInt8(ascii: ":"), "':' after the minute")
        let secondAt = index
        let second = try digits(2, "second")
        try range(second, 0...59, "second", at: secondAt)
        var millis: Int64 = 0
        if index < count, text[index] == UInt8(ascii: ".") {
            index += 1
            var fractionDigits = 0
            while index < count, text[index] >= 48, text[index] <= 57 {
                guard fractionDigits < 3 else {
                    throw Failure(message: "more than 3 fraction digits (milliseconds)", position: index)
                }
                millis = millis * 10 + Int64(text[index] - 48)
                fractionDigits += 1
                index += 1
            }
            guard fractionDigits > 0 else { throw Failure(message: "expected fraction digits after '.'", position: index) }
            for _ in fractionDigits..<3 { millis *= 10 }
        }
        // The offset: Z, ±HH or ±HH:MM.
        var offsetMinutes: Int64 = 0
        guard index < count else { throw Failure(message: "expected a UTC offset (Z, ±HH or ±HH:MM)", position: index) }
        if text[index] == UInt8(ascii: "Z") {
            index += 1
        } else if text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") {
            let sign: Int64 = text[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            let offsetAt = index
            let hours = try digits(2, "offset hours")
            try range(hours, 0...23, "offset hours", at: offsetAt)
            var minutes: Int64 = 0
            if index < count, text[index] == UInt8(ascii: ":") {
                index += 1
                let minutesAt = index
                minutes = try digits(2, "offset minutes")
                try range(minutes, 0...59, "offset minutes", at: minutesAt)
            }
            offsetMinutes = sign * (hours * 60 + minutes)
        } else {
            throw Failure(message: "expected a UTC offset (Z, ±HH or ±HH:MM)", position: index)
        }
        guard index == count else { throw Failure(message: "unexpected characters after the date", position: index) }

        var dayCount = days(year: year, month: month, day: day)
        var timeOfDay = ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + millis
        // Before 1970 the day's start may lie below Int64.min while the instant does not:
        // count from the next day's start instead.
        if dayCount < 0 { dayCount += 1; timeOfDay -= millisecondsPerDay }
        let (dayMillis, overflow) = dayCount.multipliedReportingOverflow(by: millisecondsPerDay)
        let (total, overflow2) = dayMillis.addingReportingOverflow(timeOfDay)
        guard !overflow, !overflow2 else {
            throw Failure(message: "date outside the range of milliseconds in Int64", position: 0, outOfRange: true)
        }
        return total
    }
}
