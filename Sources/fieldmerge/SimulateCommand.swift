import ArgumentParser

struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Runs many offline devices against one server and checks they converge."
    )
    func run() async throws { throw ValidationError("simulate: not built yet") }
}
