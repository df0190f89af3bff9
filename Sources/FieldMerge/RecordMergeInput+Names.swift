/// Record rules by field name: `input[proposal: "completedAt"]` rather than `proposal[5]`.
extension RecordMergeInput {
    /// The position of the field named `name` in schema order (in ``proposal`` and in the
    /// records' values), or nil when the entity has no such field.
    public func index(of name: String) -> Int? {
        entity.fields.firstIndex { $0.name == name }
    }

    /// The proposal's value of the field named `name`, to read or change in a record rule:
    ///
    /// ```swift
    /// let closedMeansDone = ClosureRecordStrategy(name: "closedMeansDone") { input in
    ///     var input = input
    ///     if input.value("closed", in: input.remote) == true { input[proposal: "status"] = "done" }
    ///     return input.proposal
    /// }
    /// ```
    ///
    /// A name the entity does not have is a programming error: it traps, as an index out of
    /// range does.
    public subscript(proposal name: String) -> Value {
        get { proposal[position(name)] }
        set { proposal[position(name)] = newValue }
    }

    /// The value of the field named `name` in `record` (one of ``ancestor``, ``local``,
    /// ``remote``); traps for a name the entity does not have.
    public func value(_ name: String, in record: Record) -> Value {
        record.values[position(name)]
    }

    private func position(_ name: String) -> Int {
        guard let index = index(of: name) else { preconditionFailure("entity '\(entity.name)' has no field '\(name)'") }
        return index
    }
}
