import FieldMergeToolSupport
import ArgumentParser
import FieldMerge
import FieldMergeWorkload

struct MergeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Batch three-way merge of base / A / B; checks the merged digest (later_write_then_b)."
    )

    @OptionGroup var workload: WorkloadOptions

    func run() throws {
        let generated = Workload.generate(
            records: workload.records, editFraction: workload.editFraction,
            fieldsPerEdit: workload.fieldsPerEdit, seed: workload.seed)
        let entity = Workload.remindersEntity
        let (ancestors, local, remote) = generated.referenceBatches()
        let expected = Workload.digest(generated.mergedLaterWriteThenB())
        let context = MergeContext(resolutionStamp: Stamp(clock: Workload.baseTime + 1 << 40, replica: Workload.replicaA))

        var result: BatchMergeResult?
        let seconds = try medianSeconds(runs: workload.runs) {
            result = try ThreeWayMerge.mergeBatch(
                entity, ancestors: ancestors, local: local, remote: remote, context: context)
        }
        let merged = result!
        let digestOK = Workload.digest(Workload.rows(of: merged)) == expected
        let tally = merged.tally()
        var line = BenchLine(
            step: "merge", records: workload.records, seconds: seconds, runs: workload.runs,
            ops: workload.records, opUnit: "records")
        line.add("field_merges_per_s", Double(workload.records * entity.fields.count) / seconds)
        line.add("records_fieldwise", tally.merged)
        line.add("conflicts", merged.conflicts.count)
        line.add("digest_ok", digestOK)
        print(line.render())

        // Only the records either side edited: what a sync feeds the core.
        let changed = changedSubset(ancestors: ancestors, local: local, remote: remote, outcomes: merged.outcomes)
        var changedResult: BatchMergeResult?
        let changedSeconds = try medianSeconds(runs: workload.runs) {
            changedResult = try ThreeWayMerge.mergeBatch(
                entity, ancestors: changed.0, local: changed.1, remote: changed.2, context: context)
        }
        var changedLine = BenchLine(
            step: "merge-changed", records: workload.records, seconds: changedSeconds, runs: workload.runs,
            ops: changed.1.count, opUnit: "records")
        changedLine.add("field_merges_per_s", Double(changed.1.count * entity.fields.count) / changedSeconds)
        changedLine.add("conflicts", changedResult!.conflicts.count)
        changedLine.add("digest_ok", digestOK)
        print(changedLine.render())
        if !digestOK { throw ExitCode(1) }
    }

    private func changedSubset(
        ancestors: RecordBatch, local: RecordBatch, remote: RecordBatch,
        outcomes: ContiguousArray<BatchMergeResult.Outcome>
    ) -> (RecordBatch, RecordBatch, RecordBatch) {
        var subsets = (
            RecordBatch(fieldCount: ancestors.fieldCount), RecordBatch(fieldCount: local.fieldCount),
            RecordBatch(fieldCount: remote.fieldCount)
        )
        for (index, outcome) in outcomes.enumerated() where outcome != .unchanged {
            try! subsets.0.append(ancestors.record(at: index, entity: "reminders"))
            try! subsets.1.append(local.record(at: index, entity: "reminders"))
            try! subsets.2.append(remote.record(at: index, entity: "reminders"))
        }
        return subsets
    }
}
