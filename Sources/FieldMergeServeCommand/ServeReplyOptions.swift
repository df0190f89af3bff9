import ArgumentParser
import FieldMergeServer

/// `fieldmerge serve`'s options for the stored replies a retry after a lost answer gets
/// again (Specs/protocol.md §2, "Stored replies").
struct ServeReplyOptions: ParsableArguments {
    private static let defaults = RevisionServer.Options()

    @Option(help: "Days a stored reply is kept: a device that retries a request after a lost answer later than this has it taken as a new one.")
    var replyRetentionDays: Double = Double(Self.defaults.replyRetention) / 86_400_000

    @Option(help: "Clients whose stored replies each authenticated user keeps, the newest; a user's older clients' replies are removed.")
    var repliesPerUser: Int = Self.defaults.repliesPerUser

    func validate() throws {
        guard replyRetentionDays > 0, replyRetentionDays <= 3_650 else {
            throw ValidationError("--reply-retention-days must be above 0 and at most 3650")
        }
        guard repliesPerUser >= 1 else { throw ValidationError("--replies-per-user must be at least 1") }
    }

    /// `options` with this retention and count.
    func apply(to options: inout RevisionServer.Options) {
        options.replyRetention = UInt64((replyRetentionDays * 86_400_000).rounded(.up))
        options.repliesPerUser = repliesPerUser
    }
}
