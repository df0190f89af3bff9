import FieldMerge
@testable import FieldMergeSimulation
import Foundation
import Testing

/// Small attachment runs (Specs/simulation.md, "Attachments"): with transfers cut off, the
/// server and the apps restarting and garbage collected with no grace period, every device
/// converges, reads every attachment back with its hash, nothing is uploaded twice and no
/// orphan remains; the run really exercised all of that; and the oracle catches bytes the
/// server lost.
@Suite struct AttachmentSimulationTests {
    static func small(seed: UInt64) -> AttachmentSimulationOptions {
        var options = AttachmentSimulationOptions()
        (options.devices, options.rounds, options.seed, options.files) = (4, 6, seed, 40)
        (options.minFileBytes, options.maxFileBytes, options.editsPerDevice) = (100, 300 << 10, 3)
        (options.interruptRate, options.serverRestartRate, options.deviceRestartRate, options.collectEvery) = (0.4, 0.5, 0.3, 4)
        return options
    }

    @Test(arguments: [1, 2] as [UInt64])
    func withFaults_everyAttachmentReadsBackAndNothingIsSentTwice(_ seed: UInt64) async throws {
        let report = try await AttachmentSimulation(options: Self.small(seed: seed)).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.attaches > 0 && report.sharedAttaches > 0 && report.replaced + report.deleted > 0, "\(report.rendered())")
        #expect(report.uploadsCut > 0 && report.downloadsCut > 0, "\(report.rendered())")
        #expect(report.serverRestarts > 0 && report.deviceRestarts > 0, "\(report.rendered())")
        #expect(report.readsChecked > 0 && report.readsRefusedByPolicy > 0, "\(report.rendered())")
        #expect(report.forbiddenProbes > 0 && report.rangeProbes > 0, "\(report.rendered())")
        #expect(report.finalReferenced > 0 && report.finalRemoved > 0 && report.removedDuringRun > 0, "\(report.rendered())")
        // Deduplication: the bytes sent are those of distinct files, plus what garbage
        // collection took away and devices sent again.
        #expect(report.bytesUploaded <= report.distinctBytes + report.bytesCollected)
    }

    @Test func theOracleCatchesBytesTheServerLost() async throws {
        var options = Self.small(seed: 3)
        (options.interruptRate, options.serverRestartRate, options.deviceRestartRate) = (0, 0, 0)
        let simulation = try AttachmentSimulation(options: options)
        simulation.tamper = { directory in
            // Remove one finished file of the server's byte directory.
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for folder in folders.sorted() where folder.count == 2 {
                if let name = try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/\(folder)").first {
                    try? FileManager.default.removeItem(atPath: "\(directory)/\(folder)/\(name)")
                    return
                }
            }
        }
        let report = try await simulation.run()
        #expect(!report.passed)
        #expect(report.violations.contains { $0.contains("the server holds") }, "\(report.rendered())")
    }

    @Test func refusesOptionsItCannotRun() {
        var options = AttachmentSimulationOptions()
        options.devices = 1
        #expect(throws: SimulationError.self) { try AttachmentSimulation(options: options) }
        options = AttachmentSimulationOptions()
        (options.minFileBytes, options.maxFileBytes) = (10, 5)
        #expect(throws: SimulationError.self) { try AttachmentSimulation(options: options) }
        options = AttachmentSimulationOptions()
        options.interruptRate = 1.5
        #expect(throws: SimulationError.self) { try AttachmentSimulation(options: options) }
    }
}
