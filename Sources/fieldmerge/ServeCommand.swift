import ArgumentParser

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serves POST /sync for a RevisionServer over HTTP."
    )
    func run() async throws { throw ValidationError("serve: not built yet") }
}
