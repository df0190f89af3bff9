import FieldMerge

/// The schema of the simulation: a sports league app in the spirit of the objc.io case
/// study (teams, players, team-player links, screens, screen items, screen instances, …).
///
/// Twelve entities with references that cascade or set null, and fields decided by the
/// strategies the oracle can predict: `counter` (increments add up), `union` (additions
/// survive), `max`, a custom `highScore` strategy (the larger integer), and `lastEditWins`
/// for everything else. Two entities bring back a record that an edit concurrent with its
/// delete touched: `match_notes` (`editWins`) and `screen_instances` (`lastEditWins`); the
/// others keep the default delete policy, `deleteWins`.
/// Entities come in dependency order: a reference always points at an earlier entity.
public enum LeagueSchema {
    /// The schema (also the default of `fieldmerge serve`).
    public static let schema: Schema = {
        do { return try Schema(entities) } catch { fatalError("LeagueSchema is invalid: \(error)") }
    }()

    /// Version 2, which `simulate --upgrade` moves the server and half the devices to a third
    /// of the way, and the other half a few rounds later: `venues.city` renamed `town`,
    /// `teams.fans` (a counter, default 100) and `players.nickname` (text, default "rookie")
    /// added, `teams.bestScore` decided by the built-in `max` instead of `highScore` (the
    /// same rule, now built in), and a new entity `sponsors` (Specs/simulation.md).
    public static let upgraded: Schema = {
        var entities = LeagueSchema.entities
        func change(_ name: String, _ body: (inout Entity) -> Void) {
            let index = entities.firstIndex { $0.name == name }!
            body(&entities[index])
        }
        change("venues") { $0.fields[1] = Field("town", .text, renamedFrom: "city") }
        change("teams") { $0.fields.append(Field("fans", .integer, strategy: .counter, default: .integer(100))) }
        change("players") { $0.fields.append(Field("nickname", .text, default: .text("rookie"))) }
        change("teams") { $0.fields[3].strategy = .max }
        entities.append(Entity("sponsors", fields: [
            Field("name", .text), Field("teamID", .reference(to: "teams", onDelete: .setNull)),
            Field("budget", .integer, strategy: .max),
        ]))
        do { return try Schema(entities, version: 2) } catch { fatalError("LeagueSchema.upgraded is invalid: \(error)") }
    }()

    /// The custom strategy on `teams.bestScore`: the larger integer wins (null is smallest).
    public static let highScore = FieldStrategy.custom("highScore") { input in
        Value.precedes(input.local, input.remote) ? input.remote : input.local
    }

    /// The entities, in dependency order.
    public static let entities: [Entity] = [
        Entity("seasons", fields: [
            Field("name", .text), Field("year", .integer), Field("tags", .textSet, strategy: .union),
        ]),
        Entity("venues", fields: [
            Field("name", .text), Field("city", .text), Field("capacity", .integer, strategy: .max),
            Field("features", .textSet, strategy: .union),
        ]),
        Entity("teams", fields: [
            Field("name", .text), Field("city", .text), Field("wins", .integer, strategy: .counter),
            Field("bestScore", .integer, strategy: highScore), Field("tags", .textSet, strategy: .union),
            Field("founded", .date),
        ]),
        Entity("players", fields: [
            Field("name", .text), Field("number", .integer), Field("goals", .integer, strategy: .counter),
            Field("topSpeed", .real, strategy: .max), Field("skills", .textSet, strategy: .union), Field("active", .bool),
        ]),
        Entity("team_players", fields: [
            Field("teamID", .reference(to: "teams", onDelete: .cascade)),
            Field("playerID", .reference(to: "players", onDelete: .cascade)),
            Field("role", .text), Field("since", .date), Field("appearances", .integer, strategy: .counter),
        ]),
        Entity("coaches", fields: [
            Field("name", .text), Field("teamID", .reference(to: "teams", onDelete: .setNull)), Field("rating", .real),
        ]),
        Entity("matches", fields: [
            Field("seasonID", .reference(to: "seasons", onDelete: .cascade)),
            Field("homeTeamID", .reference(to: "teams", onDelete: .setNull)),
            Field("awayTeamID", .reference(to: "teams", onDelete: .setNull)),
            Field("venueID", .reference(to: "venues", onDelete: .setNull)),
            Field("kickoff", .date), Field("homeScore", .integer), Field("awayScore", .integer),
            Field("attendance", .integer, strategy: .counter),
        ]),
        Entity("match_notes", fields: [
            Field("matchID", .reference(to: "matches", onDelete: .cascade)), Field("body", .text),
            Field("likes", .integer, strategy: .counter), Field("labels", .textSet, strategy: .union),
        ], deletePolicy: .editWins),
        Entity("screens", fields: [Field("name", .text), Field("title", .text), Field("position", .integer)]),
        Entity("screen_items", fields: [
            Field("screenID", .reference(to: "screens", onDelete: .cascade)), Field("label", .text),
            Field("kind", .text), Field("position", .integer),
        ]),
        Entity("screen_instances", fields: [
            Field("screenID", .reference(to: "screens", onDelete: .cascade)), Field("takenAt", .date),
            Field("comment", .text), Field("views", .integer, strategy: .counter),
        ], deletePolicy: .lastEditWins),
        Entity("screen_instance_items", fields: [
            Field("instanceID", .reference(to: "screen_instances", onDelete: .cascade)),
            Field("itemID", .reference(to: "screen_items", onDelete: .setNull)),
            Field("numericValue", .real), Field("textValue", .text), Field("peak", .real, strategy: .max),
        ]),
    ]

    /// How the seeded records are spread over the entities, per 100,000.
    static let seedShare: [Int] = [50, 500, 2_000, 30_000, 30_000, 1_000, 10_000, 2_250, 200, 2_000, 8_000, 14_000]

    /// How many records of each entity a seed of `total` records holds (each at least one).
    static func seedCounts(total: Int) -> [Int] {
        var counts = seedShare.map { max(1, $0 * total / 100_000) }
        let rest = total - counts.reduce(0, +)
        counts[3] = max(1, counts[3] + rest)  // players absorb the rounding
        return counts
    }
}

/// How the oracle treats one field, derived from its strategy and type.
enum FieldRole: Equatable {
    case lastEditWins, counter, union, max
    case reference(target: Int, action: ReferenceAction)

    init(_ field: Field, entities: [Entity]) {
        switch (field.type, field.strategy) {
        case (.reference(let target, let action), _):
            self = .reference(target: entities.firstIndex { $0.name == target }!, action: action)
        case (_, .counter?): self = .counter
        case (_, .union?): self = .union
        case (_, .max?), (_, .custom?): self = .max  // the only custom strategy is highScore, a max
        default: self = .lastEditWins
        }
    }

    static func roles(_ schema: Schema) -> [[FieldRole]] {
        schema.entities.map { entity in entity.fields.map { FieldRole($0, entities: schema.entities) } }
    }
}
