import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Testing

/// What the server stores when a device sends what it should not (Specs/reliability.md,
/// "Hostile input: what the server stores"), written once for every storage: values no
/// storage can hold refused record by record, requests that change nothing storing nothing,
/// stored replies pruned by age and by count per user, a request id reused with other
/// change sets refused. A storage's suite runs every case (`@Test(arguments:
/// HostileInputScenario.allCases)`) with a ``HostileInputHarness`` of its own.
public enum HostileInputScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case aValueHoldingNULIsRefusedAloneAndTheRestApplied
    case negativeZeroIsStoredAsZero
    case aRequestThatChangesNothingStoresNothing
    case emptyChangeSetsTakeNoRevisionAndARetryGetsTheSameAnswer
    case repliesArePrunedByAge
    case repliesArePrunedByCountPerUser
    case repliesArePrunedByAgeThenCountedAmongTheYounger
    case aRequestIDReusedWithOtherChangeSetsIsRefused
    case aReplyKeyHoldingNULIsRefusedAsAWhole

    public var testDescription: String { rawValue }

    /// notes(title text, tags textSet, weight real).
    public static let schema: Schema = {
        do {
            return try Schema([Entity("notes", fields: [Field("title", .text), Field("tags", .textSet), Field("weight", .real)])])
        } catch { preconditionFailure("\(error)") }
    }()

    public func run(_ harness: HostileInputHarness) async throws {
        switch self {
        case .aValueHoldingNULIsRefusedAloneAndTheRestApplied: try await Self.nul(harness)
        case .negativeZeroIsStoredAsZero: try await Self.negativeZero(harness)
        case .aRequestThatChangesNothingStoresNothing: try await Self.changesNothing(harness)
        case .emptyChangeSetsTakeNoRevisionAndARetryGetsTheSameAnswer: try await Self.emptyChangeSets(harness)
        case .repliesArePrunedByAge: try await Self.prunedByAge(harness)
        case .repliesArePrunedByCountPerUser: try await Self.prunedByCount(harness)
        case .repliesArePrunedByAgeThenCountedAmongTheYounger: try await Self.prunedByAgeAndCount(harness)
        case .aRequestIDReusedWithOtherChangeSetsIsRefused: try await Self.reusedRequestID(harness)
        case .aReplyKeyHoldingNULIsRefusedAsAWhole: try await Self.nulInReplyKey(harness)
        }
    }

    static func note(_ id: Int64, _ title: String, tags: [String] = [], weight: Double = 1) -> EntityChanges {
        Send.create("notes", id, [.text(title), .textSet(TextSet(tags)), .real(weight)])
    }

    static func request(_ changeSets: [ChangeSet], at revision: Int64 = 0, client: String = "c", id: String = "r") -> SyncRequest {
        SyncRequest(maxRevision: revision, changeSets: changeSets, clientID: client, requestID: id)
    }

    static func merged(_ parts: EntityChanges...) -> ChangeSet {
        var all = EntityChanges(entity: "notes")
        for part in parts {
            all.create += part.create
            all.update += part.update
            all.records += part.records
        }
        return ChangeSet(entities: [all])
    }

    /// Everything the server holds, read by a catch-up from revision 0.
    static func notes(_ server: RevisionServer) async throws -> [WireRecord] {
        try await server.handle(SyncRequest(maxRevision: 0, changeSets: [])).changeSets.first?.entities.first?.records ?? []
    }

    static func nul(_ harness: HostileInputHarness) async throws {
        let server = try await harness.makeServer(schema, RevisionServer.Options(), ManualWallClock(milliseconds: 1_000_000))
        let answer = try await server.handle(request([merged(
            note(-1, "fine"), note(-2, "a\u{0}b"), note(-3, "tagged", tags: ["x", "y\u{0}"]), note(-4, "also fine"))]))
        let set = try #require(answer.changeSets.last)
        #expect(set.conflict == false)
        #expect(set.entities.first?.create.count == 2)
        #expect(set.entities.first?.records.map(\.oldID) == [-1, -4])
        #expect(set.refused.map(\.id) == [-2, -3])
        #expect(set.refused.allSatisfy { $0.code == RevisionServer.unstorableCode && $0.entity == "notes" })
        #expect(set.refused.first?.message.contains("'title'") == true)
        #expect(set.refused.last?.message.contains("'tags'") == true)
        #expect(answer.maxRevision == 1)
        #expect(try await notes(server).map(\.values.first) == [.text("fine"), .text("also fine")])
        // An update holding it is refused alone too, and changes nothing.
        let id = try #require(set.entities.first?.create.first)
        let update = try await server.handle(request(
            [ChangeSet(entities: [Send.update("notes", id, revision: 1, field: 0, .text("\u{0}"), width: 3)])], at: 1, id: "r2"))
        #expect(update.changeSets.last?.refused.map(\.id) == [id])
        #expect(update.changeSets.last?.conflict == false)
        #expect(update.maxRevision == 1)
        #expect(try await notes(server).first?.values.first == .text("fine"))
        #expect(try await harness.storedReplies(server) == 1)
    }

    static func negativeZero(_ harness: HostileInputHarness) async throws {
        let server = try await harness.makeServer(schema, RevisionServer.Options(), ManualWallClock(milliseconds: 1_000_000))
        let answer = try await server.handle(request([merged(note(-1, "zero", weight: -0.0), note(-2, "minus", weight: -2.5))]))
        let confirmed = answer.changeSets.last?.entities.first?.records.map { $0.values[2] }
        #expect(confirmed?.map(\.realBits) == [Double(0).bitPattern, Double(-2.5).bitPattern])
        let stored = try await notes(server).map { $0.values[2].realBits }
        #expect(stored == [Double(0).bitPattern, Double(-2.5).bitPattern] as [UInt64?])
    }

    static func changesNothing(_ harness: HostileInputHarness) async throws {
        var options = RevisionServer.Options()
        options.authorize = { $0.identity?.user != "viewer" }
        let server = try await harness.makeServer(schema, options, ManualWallClock(milliseconds: 1_000_000))
        let viewer = SyncIdentity(user: "viewer")
        for client in 0..<20 {
            let answer = try await server.handle(request([merged(note(-1, "mine"))], client: "v\(client)"), identity: viewer)
            #expect(answer.changeSets.last?.refused.first?.code == "unauthorized")
        }
        let empties = Array(repeating: ChangeSet(entities: []), count: 1_000)
        let answer = try await server.handle(request(empties, client: "v-empty"), identity: viewer)
        #expect(answer.changeSets.count == 1_000)
        #expect(answer.changeSets.allSatisfy { $0.conflict == false && $0.entities.isEmpty })
        #expect(answer.maxRevision == 0)
        #expect(await server.maxRevision == 0)
        #expect(try await harness.storedReplies(server) == 0)
        // A user who may write stores one reply.
        _ = try await server.handle(request([merged(note(-1, "ann's"))], client: "a"), identity: SyncIdentity(user: "ann"))
        #expect(try await harness.storedReplies(server) == 1)
    }

    static func emptyChangeSets(_ harness: HostileInputHarness) async throws {
        let server = try await harness.makeServer(schema, RevisionServer.Options(), ManualWallClock(milliseconds: 1_000_000))
        let sent = request([ChangeSet(entities: [EntityChanges(entity: "notes")]), merged(note(-1, "one")), ChangeSet(entities: [])])
        let first = try await server.handle(sent)
        #expect(first.maxRevision == 1)
        #expect(first.changeSets.count == 3)
        #expect(first.changeSets.map(\.conflict) == [false, false, false])
        #expect(first.changeSets[1].entities.first?.records.first?.revision == 1)
        let retry = try await server.handle(sent)
        #expect(retry == first)
        #expect(await server.maxRevision == 1)
        #expect(try await notes(server).count == 1)
    }

    static func prunedByAge(_ harness: HostileInputHarness) async throws {
        let wall = ManualWallClock(milliseconds: 1_000_000)
        var options = RevisionServer.Options()
        options.replyRetention = 60_000
        let server = try await harness.makeServer(schema, options, wall)
        let old = request([merged(note(-1, "old"))], client: "a", id: "1")
        let first = try await server.handle(old)
        #expect(try await server.handle(old) == first)  // replayed within the retention
        wall.advance(by: 60_001)
        _ = try await server.handle(request([merged(note(-1, "new"))], at: 1, client: "b", id: "2"))
        #expect(try await harness.storedReplies(server) == 1)
        // Past the retention the retry is a new request: created again, under another id.
        let late = try await server.handle(old)
        #expect(late.changeSets.last?.entities.first?.create != first.changeSets.last?.entities.first?.create)
        #expect(try await notes(server).count == 3)
    }

    static func prunedByCount(_ harness: HostileInputHarness) async throws {
        var options = RevisionServer.Options()
        options.repliesPerUser = 2
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let server = try await harness.makeServer(schema, options, wall)
        let ann = SyncIdentity(user: "ann"), bob = SyncIdentity(user: "bob")
        var sent: [(request: SyncRequest, identity: SyncIdentity?, answer: SyncResponse)] = []
        var revision: Int64 = 0
        for (client, identity) in [("b1", bob), ("a1", ann), ("a2", ann), ("a3", ann), ("x1", nil), ("x2", nil), ("x3", nil)] {
            wall.advance(by: 1)
            let request = request([merged(note(-1, client))], at: revision, client: client, id: "r")
            let answer = try await server.handle(request, identity: identity)
            revision = answer.maxRevision
            sent.append((request, identity, answer))
        }
        // ann keeps two (a2, a3), bob his one, the anonymous clients all three (age only).
        #expect(try await harness.storedReplies(server) == 6)
        for (request, identity, answer) in sent where request.clientID != "a1" {
            #expect(try await server.handle(request, identity: identity) == answer, "\(request.clientID ?? "") replayed")
        }
        #expect(await server.maxRevision == 7)
        _ = try await server.handle(sent[1].request, identity: ann)
        #expect(await server.maxRevision == 8, "a1's reply was pruned: its retry is taken anew")
    }

    /// A user's replies past the retention go by age, and the user's count is taken among
    /// the younger ones only (as if pruned by age first), whatever the storage does in one
    /// statement.
    static func prunedByAgeAndCount(_ harness: HostileInputHarness) async throws {
        var options = RevisionServer.Options()
        options.replyRetention = 60_000
        options.repliesPerUser = 2
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let server = try await harness.makeServer(schema, options, wall)
        let ann = SyncIdentity(user: "ann")
        var sent: [(request: SyncRequest, answer: SyncResponse)] = []
        var revision: Int64 = 0
        for (index, client) in ["a1", "a2", "a3", "a4"].enumerated() {
            // a1 and a2 before the retention ends, a3 and a4 after it.
            wall.advance(by: index == 2 ? 60_001 : 1)
            let request = request([merged(note(-1, client))], at: revision, client: client, id: "r")
            let answer = try await server.handle(request, identity: ann)
            revision = answer.maxRevision
            sent.append((request, answer))
        }
        // a1 and a2 went by age when a3 was stored; a4 keeps a3 (two with itself).
        #expect(try await harness.storedReplies(server) == 2)
        for (request, answer) in sent.suffix(2) {
            #expect(try await server.handle(request, identity: ann) == answer, "\(request.clientID ?? "") replayed")
        }
        #expect(await server.maxRevision == 4)
        _ = try await server.handle(sent[1].request, identity: ann)
        #expect(await server.maxRevision == 5, "a2's reply was pruned: its retry is taken anew")
    }

    static func reusedRequestID(_ harness: HostileInputHarness) async throws {
        let server = try await harness.makeServer(schema, RevisionServer.Options(), ManualWallClock(milliseconds: 1_000_000))
        let first = request([merged(note(-1, "first"))])
        let answer = try await server.handle(first)
        let error = await #expect(throws: ServerError.self) {
            _ = try await server.handle(request([merged(note(-1, "other"))]))
        }
        #expect(error?.code == .idempotencyMismatch)
        #expect(error?.status == 422)
        #expect(await server.maxRevision == 1)
        #expect(try await notes(server).map(\.values.first) == [.text("first")])
        // The same change sets are still a retry, whatever else differs (the page limit).
        var retry = first
        retry.limit = 5
        #expect(try await server.handle(retry).changeSets.last == answer.changeSets.last)
    }

    static func nulInReplyKey(_ harness: HostileInputHarness) async throws {
        let server = try await harness.makeServer(schema, RevisionServer.Options(), ManualWallClock(milliseconds: 1_000_000))
        for sent in [request([merged(note(-1, "x"))], client: "c\u{0}"), request([merged(note(-1, "x"))], id: "r\u{0}")] {
            let error = await #expect(throws: ServerError.self) { _ = try await server.handle(sent) }
            #expect(error?.code == .badRequest)
            #expect(error?.message.contains("U+0000") == true)
        }
        let error = await #expect(throws: ServerError.self) {
            _ = try await server.handle(request([merged(note(-1, "x"))]), identity: SyncIdentity(user: "a\u{0}"))
        }
        #expect(error?.code == .badRequest)
        #expect(await server.maxRevision == 0)
        #expect(try await harness.storedReplies(server) == 0)
    }
}

/// How a storage's suite runs ``HostileInputScenario``s.
public struct HostileInputHarness {
    /// A server on a new, empty data set of `schema`, with `options`, on `wall`.
    public var makeServer: (Schema, RevisionServer.Options, ManualWallClock) async throws -> RevisionServer
    /// How many replies the server's storage keeps.
    public var storedReplies: (RevisionServer) async throws -> Int

    public init(
        makeServer: @escaping (Schema, RevisionServer.Options, ManualWallClock) async throws -> RevisionServer,
        storedReplies: @escaping (RevisionServer) async throws -> Int
    ) {
        self.makeServer = makeServer
        self.storedReplies = storedReplies
    }
}

extension Value {
    /// A real's bits (-0.0 and 0.0 differ); nil for anything else.
    var realBits: UInt64? {
        if case .real(let real) = self { return real.bitPattern }
        return nil
    }
}
