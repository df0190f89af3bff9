/// Why a conflict was not decided by its strategy's own rule but by a fallback.
///
/// A strategy that cannot do its work in bounded time gives up and lets the field's fallback
/// (`lastEditWins`) decide; ``FieldConflict/fallback`` says so, so an app can show the user
/// that the two versions were not combined.
public enum MergeFallback: String, Hashable, Sendable {
    /// The `text` strategy's line diff needed more than ``LineMerge/editBudget`` edits of
    /// lines found in both texts (`Specs/merge-semantics.md`, section 6); the value with the
    /// larger stamp was kept instead.
    case editBudgetExhausted
}
