import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import Synchronization
import FieldMergeTestSupport
import Testing

/// A probe given to the client, the transport and the server hears each phase of a round
/// where it happens, and changes nothing of what a sync does.
@Suite struct SyncProbeTests {
    final class Recorder: SyncProbe {
        let heard = Mutex<[SyncPhase: Int]>([:])
        func record(_ phase: SyncPhase, _ duration: Duration) {
            precondition(duration >= .zero)
            heard.withLock { $0[phase, default: 0] += 1 }
        }
        func take() -> [SyncPhase: Int] { heard.withLock { heard in defer { heard = [:] }; return heard } }
    }

    @Test func everyPhaseOfAnUploadAndADownloadIsHeard() async throws {
        let schema = try syncSchema()
        let probe = Recorder()
        var options = RevisionServer.Options()
        options.probe = probe
        let server = try RevisionServer(.memory, schema: schema, options: options)
        let transport = InProcessTransport(server: server, probe: probe)
        let writer = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport, probe: probe)
        let reader = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport, probe: probe)
        _ = try await writer.withStore { store in
            for n in 0..<3 { try store.insert("lists", values: [.text("list \(n)")]) }
        }

        let upload = try await writer.sync()
        #expect(upload.sent == 3)
        let uploadPhases = probe.take()
        let client: [SyncPhase] = [.clientRead, .encode, .gzip, .clientDecode, .merge, .clientApply]
        let serverWrites: [SyncPhase] = [
            .serverDecode, .catchUp, .serverApply, .replyStorage, .serverCommit, .responseEncode, .responseGzip,
        ]
        for phase in client + serverWrites { #expect(uploadPhases[phase, default: 0] >= 1, "\(phase)") }
        #expect(uploadPhases[.log] == 3, "one log write per record created")

        let download = try await reader.sync()
        #expect(download.received == 3)
        let downloadPhases = probe.take()
        for phase in client + [.serverDecode, .catchUp, .responseEncode, .responseGzip] {
            #expect(downloadPhases[phase, default: 0] >= 1, "\(phase)")
        }
        // A catch-up only reads: the server applies, logs and stores nothing.
        for phase: SyncPhase in [.serverApply, .log, .replyStorage] { #expect(downloadPhases[phase] == nil, "\(phase)") }
    }

    @Test func nestedPhasesNameTheirParent() {
        #expect(SyncPhase.log.parent == .serverApply)
        #expect(SyncPhase.merge.parent == .clientApply)
        #expect(SyncPhase.allCases.filter { $0.parent != nil }.count == 2)
    }
}
