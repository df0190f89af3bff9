// The store's API names the driver's types (`Store(.file(path:))` takes a
// `Database.Location`, `store.database` is a `Database`): one import gives both.
@_exported import FieldMergeSQLiteDriver
