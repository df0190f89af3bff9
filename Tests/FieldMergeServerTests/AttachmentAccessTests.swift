import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Who may download an attachment (Specs/attachments.md §4): a caller who reads a live
/// record that references it; with scopes, one whose granted roots hold that record.
@Suite struct AttachmentAccessTests {
    static let schema = try! Schema([
        Entity("users", fields: [Field("name", .text), Field("avatar", .attachment)]),
        Entity("projects", fields: [Field("name", .text), Field("ownerID", .text)]),
        Entity("tasks", fields: [
            Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade)), Field("photo", .attachment),
        ]),
    ])
    static let rules = ScopeRules([
        SyncScope(
            "project", root: "projects", members: ["tasks": "projectID"],
            grants: [.roots(where: [SyncScope.Condition("ownerID", .claim("sub"))]), .roles(["admin"])])
    ])
    static let admin = SyncIdentity(user: "root", roles: ["admin"])
    static let (annPhoto, bobPhoto, avatar) = (hex("1"), hex("2"), hex("3"))

    static func hex(_ digit: Character) -> String { String(repeating: digit, count: 64) }
    static func reference(_ hash: String) -> Value { .text("sha256:\(hash);10;image/png") }

    func server(scoped: Bool) async throws -> RevisionServer {
        var options = RevisionServer.Options()
        if scoped { options.scopes = Self.rules }
        let server = try RevisionServer(.memory, schema: Self.schema, options: options)
        let identity = scoped ? Self.admin : nil
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [Send.changeSet(
            Send.create("projects", -1, [.text("P1"), .text("ann")]), Send.create("projects", -2, [.text("P2"), .text("bob")]),
            Send.create("users", -1, [.text("ann"), Self.reference(Self.avatar)]))]), identity: identity)
        _ = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [Send.changeSet(
            Send.create("tasks", -1, [.text("t1"), .integer(1), Self.reference(Self.annPhoto)]),
            Send.create("tasks", -2, [.text("t2"), .integer(2), Self.reference(Self.bobPhoto)]))]), identity: identity)
        #expect(await server.maxRevision == 2)
        return server
    }

    @Test func withoutScopes_anyLiveReferenceGrantsIt_andADeleteTakesItAway() async throws {
        let server = try await server(scoped: false)
        for identity in [nil, SyncIdentity(user: "ann"), SyncIdentity(user: "zoe")] {
            for hash in [Self.annPhoto, Self.bobPhoto, Self.avatar] {
                #expect(try await server.attachmentAccess(hash, identity: identity) == .allowed(mediaType: "image/png"))
            }
        }
        #expect(try await server.attachmentAccess(Self.hex("4"), identity: nil) == .unreferenced)
        _ = try await server.handle(SyncRequest(maxRevision: 2, changeSets: [Send.changeSet(Send.delete("tasks", 1, revision: 2, width: 3))]))
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: nil) == .unreferenced)
    }

    @Test func withScopes_onlyTheRootsAUserIsGrantedCount() async throws {
        let server = try await server(scoped: true)
        let ann = SyncIdentity(user: "ann"), bob = SyncIdentity(user: "bob"), zoe = SyncIdentity(user: "zoe")
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: ann) == .allowed(mediaType: "image/png"))
        #expect(try await server.attachmentAccess(Self.bobPhoto, identity: ann) == .unreferenced)
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: bob) == .unreferenced)
        #expect(try await server.attachmentAccess(Self.bobPhoto, identity: bob) == .allowed(mediaType: "image/png"))
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: zoe) == .unreferenced)
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: Self.admin) == .allowed(mediaType: "image/png"))
        #expect(try await server.attachmentAccess(Self.bobPhoto, identity: Self.admin) == .allowed(mediaType: "image/png"))
        // An unscoped entity's records are everyone's.
        #expect(try await server.attachmentAccess(Self.avatar, identity: zoe) == .allowed(mediaType: "image/png"))
        #expect(try await server.attachmentAccess(Self.avatar, identity: nil) == .allowed(mediaType: "image/png"))
    }

    @Test func aRootASubscribeGrantAllows_counts_withoutNamingSubscriptions() async throws {
        // Ann owns P1; anyone may subscribe to P2 (its name is "P2"); the role "auditor"
        // may subscribe to any project; admins hold every project.
        var options = RevisionServer.Options()
        options.scopes = ScopeRules([
            SyncScope(
                "project", root: "projects", members: ["tasks": "projectID"],
                grants: [
                    .roots(where: [SyncScope.Condition("ownerID", .claim("sub"))]),
                    .subscribe(where: [SyncScope.Condition("name", .value(.text("P2")))]),
                    .subscribe(roles: ["auditor"]), .roles(["admin"]),
                ])
        ])
        let server = try RevisionServer(.memory, schema: Self.schema, options: options)
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [Send.changeSet(
            Send.create("projects", -1, [.text("P1"), .text("ann")]), Send.create("projects", -2, [.text("P2"), .text("bob")]),
            Send.create("projects", -3, [.text("P3"), .text("bob")]))]), identity: Self.admin)
        _ = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [Send.changeSet(
            Send.create("tasks", -1, [.text("t1"), .integer(1), .text("sha256:\(Self.annPhoto);10;image/jpeg")]),
            Send.create("tasks", -2, [.text("t2"), .integer(2), .text("sha256:\(Self.bobPhoto);10;application/pdf")]),
            Send.create("tasks", -3, [.text("t3"), .integer(3), Self.reference(Self.avatar)]))]), identity: Self.admin)
        let zoe = SyncIdentity(user: "zoe"), auditor = SyncIdentity(user: "eve", roles: ["auditor"])
        // P2 is open to subscription: its task's photo is zoe's to download, as the media type the record names.
        #expect(try await server.attachmentAccess(Self.bobPhoto, identity: zoe) == .allowed(mediaType: "application/pdf"))
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: zoe) == .unreferenced)
        #expect(try await server.attachmentAccess(Self.avatar, identity: zoe) == .unreferenced)
        #expect(try await server.attachmentAccess(Self.annPhoto, identity: SyncIdentity(user: "ann")) == .allowed(mediaType: "image/jpeg"))
        for hash in [Self.annPhoto, Self.bobPhoto, Self.avatar] {
            #expect(try await server.attachmentAccess(hash, identity: auditor) != .unreferenced)
        }
    }

    @Test func anEntityTheUserMayNotRead_grantsNothing() async throws {
        var options = RevisionServer.Options()
        options.readable = { identity, entity in entity != "users" || identity?.user == "ann" }
        let server = try RevisionServer(.memory, schema: Self.schema, options: options)
        _ = try await server.handle(SyncRequest(
            maxRevision: 0, changeSets: [Send.changeSet(Send.create("users", -1, [.text("ann"), Self.reference(Self.avatar)]))]))
        #expect(try await server.attachmentAccess(Self.avatar, identity: SyncIdentity(user: "ann")) == .allowed(mediaType: "image/png"))
        #expect(try await server.attachmentAccess(Self.avatar, identity: SyncIdentity(user: "bob")) == .unreferenced)
    }
}
