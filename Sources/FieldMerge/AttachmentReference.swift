/// The value of an ``FieldType/attachment`` field: which bytes (their SHA-256), how many,
/// and what they are (a media type). The bytes themselves travel apart from the records.
///
/// A reference has one text form, and only that form is stored and sent:
///
/// ```
/// sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08;4;text/plain
/// ```
///
/// - `sha256:` then the digest as 64 lowercase hexadecimal digits;
/// - `;` then the size in bytes, in decimal, without a sign or leading zeros
///   (0 ... `Int64.max`);
/// - `;` then the media type, `type/subtype`, lowercase, no parameters: each part 1 to 64
///   of the characters `a-z 0-9 ! # $ & ^ _ . + -`, starting with a letter or digit.
///
/// Anything else (uppercase hex, a space, `image/JPEG`, `text/plain; charset=utf-8`) is
/// refused: two texts never name the same bytes, so last edit wins and equality work on
/// the text as they do for any text field. Specs/attachments.md.
public struct AttachmentReference: Hashable, Sendable, CustomStringConvertible {
    /// The digest of the bytes: 64 lowercase hexadecimal digits.
    public let sha256: String
    /// The size of the bytes.
    public let size: Int64
    /// The media type, `type/subtype`, lowercase.
    public let mediaType: String

    /// A reference to `size` bytes of `mediaType` whose SHA-256 is `sha256`.
    ///
    /// - Throws: ``AttachmentReferenceError`` when a part is not in its canonical form.
    public init(sha256: String, size: Int64, mediaType: String) throws(AttachmentReferenceError) {
        guard Self.isSHA256(sha256) else {
            throw AttachmentReferenceError("the digest must be 64 lowercase hexadecimal digits")
        }
        guard size >= 0 else { throw AttachmentReferenceError("the size must not be negative, got \(size)") }
        try Self.checkMediaType(mediaType)
        self.sha256 = sha256
        self.size = size
        self.mediaType = mediaType
    }

    /// The reference `text` writes, which must be canonical (``text``).
    ///
    /// - Throws: ``AttachmentReferenceError`` saying what is wrong.
    public init(parsing text: String) throws(AttachmentReferenceError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maxTextLength else {
            throw AttachmentReferenceError("an attachment reference has at most \(Self.maxTextLength) bytes, got \(bytes.count)")
        }
        guard bytes.starts(with: Self.prefix.utf8) else {
            throw AttachmentReferenceError("an attachment reference starts with 'sha256:'")
        }
        let parts = bytes.dropFirst(Self.prefix.utf8.count).split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw AttachmentReferenceError("an attachment reference is sha256:<hex>;<size>;<media type>")
        }
        guard let size = Self.decimal(parts[1]) else {
            throw AttachmentReferenceError("the size must be decimal digits without a sign or leading zeros, at most \(Int64.max)")
        }
        try self.init(sha256: String(decoding: parts[0], as: UTF8.self), size: size, mediaType: String(decoding: parts[2], as: UTF8.self))
    }

    /// The canonical text: `sha256:<hex>;<size>;<media type>`.
    public var text: String { "\(Self.prefix)\(sha256);\(size);\(mediaType)" }

    public var description: String { text }

    /// The longest text a reference can have: prefix, digest, `Int64.max`, two separators
    /// and a media type of two parts of 64 characters and a slash.
    public static let maxTextLength = 7 + 64 + 19 + 2 + 129

    /// The longest part of a media type (before or after the slash).
    public static let maxMediaTypePart = 64

    static let prefix = "sha256:"

    /// Whether `text` is a SHA-256 digest as references and paths write it: 64 lowercase
    /// hexadecimal digits, nothing else.
    public static func isSHA256(_ text: some StringProtocol) -> Bool {
        var count = 0
        for byte in text.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) else {
                return false
            }
            count += 1
        }
        return count == 64
    }

    private static func checkMediaType(_ mediaType: String) throws(AttachmentReferenceError) {
        let parts = Array(mediaType.utf8).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw AttachmentReferenceError("the media type must be type/subtype, got '\(Self.shown(mediaType))'")
        }
        for part in parts {
            guard (1...maxMediaTypePart).contains(part.count), let first = part.first, isLetterOrDigit(first),
                part.allSatisfy({ isLetterOrDigit($0) || Self.mediaTypeMarks.contains($0) })
            else {
                throw AttachmentReferenceError(
                    "each part of the media type has 1 to \(maxMediaTypePart) of a-z 0-9 ! # $ & ^ _ . + -, "
                        + "starting with a letter or digit (lowercase, no parameters), got '\(Self.shown(mediaType))'")
            }
        }
    }

    private static let mediaTypeMarks = Set("!#$&^_.+-".utf8)

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// At most 40 characters of hostile text, for a message.
    private static func shown(_ text: String) -> String {
        let scalars = text.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "?" }
        return scalars.joined() + (text.unicodeScalars.count > 40 ? "…" : "")
    }

    /// Decimal digits without a sign or leading zeros, within `Int64`.
    private static func decimal(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard !digits.isEmpty, digits.count <= 19, digits.count == 1 || digits.first != UInt8(ascii: "0") else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value
    }
}

/// Why text is not a canonical ``AttachmentReference``.
public struct AttachmentReferenceError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { "not an attachment reference: \(message)" }
}
