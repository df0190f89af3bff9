/// Typed access to a JSON object that reports the path of whatever is missing or wrong.
struct Reader {
    let path: String
    let json: JSONValue

    init(path: String, _ json: JSONValue) {
        self.path = path
        self.json = json
    }

    func error(_ key: String, _ message: String) -> DocumentError {
        DocumentError(path: "\(path).\(key)", message: message)
    }

    private func object() throws(DocumentError) -> [String: JSONValue] {
        guard case .object(let object) = json else {
            throw DocumentError(path: path, message: "expected an object, got \(json.kindName)")
        }
        return object
    }

    func optional(_ key: String) throws(DocumentError) -> JSONValue? {
        let value = try object()[key]
        if case .null? = value { return nil }
        return value
    }

    func has(_ key: String) throws(DocumentError) -> Bool { try object()[key] != nil }

    /// Rejects keys outside `allowed`, so that a misspelt key is an error, not a default.
    func allowOnly(_ allowed: Set<String>) throws(DocumentError) {
        for key in try object().keys.sorted() where !allowed.contains(key) {
            throw error(key, "unknown key; expected one of " + allowed.sorted().joined(separator: ", "))
        }
    }

    func child(_ key: String) throws(DocumentError) -> Reader {
        guard let value = try optional(key) else { throw error(key, "missing") }
        return Reader(path: "\(path).\(key)", value)
    }

    func string(_ key: String) throws(DocumentError) -> String {
        guard let value = try optionalString(key) else { throw error(key, "missing") }
        return value
    }

    func optionalString(_ key: String) throws(DocumentError) -> String? {
        guard let value = try optional(key) else { return nil }
        guard case .string(let string) = value else { throw error(key, "expected a string, got \(value.kindName)") }
        return string
    }

    func optionalBool(_ key: String) throws(DocumentError) -> Bool? {
        guard let value = try optional(key) else { return nil }
        guard case .bool(let bool) = value else { throw error(key, "expected a boolean, got \(value.kindName)") }
        return bool
    }

    func integer(_ key: String) throws(DocumentError) -> Int64 {
        guard let value = try optional(key) else { throw error(key, "missing") }
        guard case .integer(let integer) = value else { throw error(key, "expected an integer, got \(value.kindName)") }
        return integer
    }

    func array(_ key: String) throws(DocumentError) -> [Reader] {
        guard let value = try optional(key) else { throw error(key, "missing") }
        guard case .array(let items) = value else { throw error(key, "expected an array, got \(value.kindName)") }
        return items.enumerated().map { Reader(path: "\(path).\(key)[\($0.offset)]", $0.element) }
    }

    func entries(_ key: String) throws(DocumentError) -> [String: JSONValue] {
        guard let value = try optional(key) else { return [:] }
        guard case .object(let object) = value else { throw error(key, "expected an object, got \(value.kindName)") }
        return object
    }
}

extension JSONValue {
    var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer: return "an integer"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
