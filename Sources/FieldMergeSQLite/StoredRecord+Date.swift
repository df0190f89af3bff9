#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FieldMerge

extension Column {
    /// A `Date` property on a `date` field (stored as milliseconds since 1970, UTC: a date
    /// read back is rounded to the millisecond).
    public static func date(_ name: String, _ path: WritableKeyPath<Row, Date> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Date? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .date, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: { .date(milliseconds($0)) }) {
            if case .date(let v) = $0 { date(v) } else { nil }
        }
    }

    /// An optional `Date` property on a `date` field; nil is null.
    public static func date(_ name: String, _ path: WritableKeyPath<Row, Date?> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Date? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .date, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: { $0.map { .date(milliseconds($0)) } ?? .null }) {
            switch $0 { case .date(let v): .some(date(v)); case .null: .some(nil); default: nil }
        }
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    private static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
