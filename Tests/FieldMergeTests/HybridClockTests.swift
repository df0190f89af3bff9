import Testing
@testable import FieldMerge

@Suite struct HybridClockTests {
    @Test func now_followsTheWallClock() {
        let wall = ManualWallClock(milliseconds: 1_000)
        var clock = HybridClock(replica: replicaL, wall: wall)
        let first = clock.now()
        #expect(first.milliseconds == 1_000 && first.counter == 0 && first.replica == replicaL)
        wall.set(milliseconds: 2_000)
        #expect(clock.now().milliseconds == 2_000)
    }

    @Test func now_isStrictlyIncreasingWhenTheWallClockStandsStillOrGoesBack() {
        let wall = ManualWallClock(milliseconds: 5_000)
        var clock = HybridClock(replica: replicaL, wall: wall)
        var previous = clock.now()
        for step in 0..<1_000 {
            if step == 500 { wall.set(milliseconds: 4_000) }
            let next = clock.now()
            #expect(next > previous)
            previous = next
        }
        #expect(previous.milliseconds == 5_000 && previous.counter == 1_000)
    }

    @Test func counterOverflow_carriesIntoTheMillisecond() {
        let wall = ManualWallClock(milliseconds: 7)
        var clock = HybridClock(replica: replicaL, last: Stamp(milliseconds: 7, counter: .max, replica: replicaL).clock, wall: wall)
        let next = clock.now()
        #expect(next.milliseconds == 8 && next.counter == 0)
    }

    @Test func observe_movesPastRemoteStamps() {
        let wall = ManualWallClock(milliseconds: 1_000)
        var clock = HybridClock(replica: replicaL, wall: wall)
        let remote = Stamp(milliseconds: 1_500, counter: 3, replica: replicaR)
        #expect(clock.observe(remote) == .accepted)
        let next = clock.now()
        #expect(next > remote)
        #expect(next.milliseconds == 1_500 && next.counter == 4)
    }

    @Test func observe_farFutureStampIsReportedAndFollowedOnlyToTheBound() {
        let wall = ManualWallClock(milliseconds: 10_000)
        var clock = HybridClock(replica: replicaL, maxDrift: 60_000, wall: wall)
        let aYearAhead = Stamp(milliseconds: 10_000 + 31_536_000_000, replica: replicaR)
        #expect(clock.observe(aYearAhead) == .aheadOfBound(byMilliseconds: 31_536_000_000))
        let next = clock.now()
        #expect(next < aYearAhead)
        #expect(next.milliseconds == 10_000 + 60_000)
    }

    @Test func acceptanceLimit_clampsFastClients() {
        let wall = ManualWallClock(milliseconds: 10_000)
        let server = HybridClock(replica: ReplicaID(99), maxDrift: 60_000, wall: wall)
        let fast = Stamp(milliseconds: 10_000_000, replica: replicaR)
        let clamped = fast.clamped(toAtMost: server.acceptanceLimit())
        #expect(clamped.milliseconds == 70_000 && clamped.replica == replicaR)
        let honest = Stamp(milliseconds: 10_500, replica: replicaR)
        #expect(honest.clamped(toAtMost: server.acceptanceLimit()) == honest)
    }

    @Test func stamps_orderByClockThenReplica() {
        #expect(stamp(5, replicaR) < stamp(6, replicaL))
        #expect(stamp(5, replicaL) < stamp(5, replicaR))
        #expect(stamp(5, replicaL) != stamp(5, replicaR))
        #expect(Stamp.none < stamp(1))
    }
}

@Suite struct SchemaTests {
    let lists = Entity("lists", fields: [Field("name", .text)])

    @Test func validSchema_isAccepted() throws {
        let tasks = Entity("tasks", fields: [
            Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade)),
            Field("count", .integer, strategy: .counter), Field("tags", .textSet, strategy: .union),
        ])
        let schema = try Schema([lists, tasks])
        #expect(schema.entity("tasks")?.fieldIndex("count") == 2)
    }

    @Test func duplicateFieldNames_evenInOtherCase_areRejected() {
        let bad = Entity("tasks", fields: [Field("title", .text), Field("Title", .text)])
        #expect(throws: MergeError.duplicateField(entity: "tasks", field: "Title")) { try Schema([bad]) }
    }

    @Test func duplicateEntities_areRejected() {
        #expect(throws: MergeError.duplicateEntity("LISTS")) {
            try Schema([lists, Entity("LISTS", fields: [])])
        }
    }

    @Test(arguments: ["", "1abc", "has space", "semi;colon", "quo\"te", "__stamps__", "sqlite_master", "naïve",
                      String(repeating: "x", count: 65), "nul\u{0}byte"])
    func unsafeNames_areRejected(_ name: String) {
        #expect(throws: MergeError.self) { try Schema([Entity(name, fields: [])]) }
        #expect(throws: MergeError.self) { try Schema([Entity("ok", fields: [Field(name, .text)])]) }
    }

    @Test(arguments: ["id", "revision", "ID"])
    func reservedFieldNames_areRejected(_ name: String) {
        #expect(throws: MergeError.reservedName(entity: "tasks", name: name)) {
            try Schema([Entity("tasks", fields: [Field(name, .integer)])])
        }
    }

    @Test func unknownReferenceTarget_isRejected() {
        let tasks = Entity("tasks", fields: [Field("listID", .reference(to: "folders", onDelete: .setNull))])
        #expect(throws: MergeError.unknownReferenceTarget(entity: "tasks", field: "listID", target: "folders")) {
            try Schema([tasks])
        }
    }

    @Test func strategyThatCannotDecideTheType_isRejected() {
        let tasks = Entity("tasks", fields: [Field("title", .text, strategy: .counter)])
        #expect(throws: MergeError.strategyNotApplicable(entity: "tasks", field: "title", strategy: "counter", type: "text")) {
            try Schema([tasks])
        }
        #expect(throws: MergeError.self) {
            try Schema([Entity("tasks", fields: [Field("n", .integer)], defaultStrategy: .counter)])
        }
    }

    @Test func tooManyFields_isRejected() {
        let fields = (0..<65).map { Field("f\($0)", .integer) }
        #expect(throws: MergeError.tooManyFields(entity: "wide", count: 65)) { try Schema([Entity("wide", fields: fields)]) }
    }

    @Test func recordValidation_reportsTypeMismatch() {
        let entity = taskEntity()
        var bad = record(entity, at: stamp(1))
        bad.values[1] = "not a number"
        #expect(throws: MergeError.typeMismatch(entity: "tasks", id: 1, field: "count", expected: "integer", got: "text")) {
            try bad.validate(against: entity)
        }
    }
}
