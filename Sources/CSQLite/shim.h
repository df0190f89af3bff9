#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline void (*csqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

// sqlite3_config is variadic, which Swift cannot call. Turning off memory statistics removes a
// global mutex from every allocation; it only takes effect before SQLite initialises.
static inline int csqlite_disable_memstatus(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

// sqlite3_db_config is variadic too. Turns this connection's triggers off or on (other
// connections to the file keep theirs); returns SQLITE_OK, or an error code.
static inline int csqlite_enable_triggers(sqlite3 *db, int on) {
    int now = -1;
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, on, &now);
}
