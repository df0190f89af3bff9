import FieldMerge

/// The executor a connection's owner runs on, off the shared pool: SQLite calls block.
public typealias DatabaseExecutor = SerialQueueExecutor
