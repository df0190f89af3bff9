/*
 * What SQLite itself costs for the client's side of an incremental sync: C changes
 * scattered over a table of N rows shaped like a FieldMerge `reminders` table (8 fields,
 * a 96-byte stamps blob, pending, revision, a null ancestor), written with the store's
 * upsert on the system SQLite, WAL, synchronous = NORMAL, no automatic checkpoint.
 * No Swift, no JSON, no merge: a floor for `fieldmerge bench sync --changes C`.
 *
 *   cc -O2 scattered-upserts.c -lsqlite3 -o /tmp/scattered-upserts
 *   /tmp/scattered-upserts N C [order] [transaction_size] [cache_kib] [page_size] [mmap_mib]
 *
 * order: "random" (the order a page of catch-up arrives in) or "sorted" (by id, as
 * `Store.apply` writes it); transaction_size: rows per commit (0: one transaction, 10000:
 * one per page of catch-up); mmap_mib: PRAGMA mmap_size in MiB (0, the default: read pages
 * with pread). Prints the time of the statements and of the commits.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void must(int code, sqlite3 *db, const char *what) {
    if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static int ascending(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void bind_row(sqlite3_stmt *s, int id, const char *title, const unsigned char *stamps, int revision) {
    char notes[64];
    snprintf(notes, sizeof notes, "some notes for reminder %d", id);
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, title, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, notes, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 4, id % 2);
    sqlite3_bind_int(s, 5, id % 4);
    sqlite3_bind_int64(s, 6, 1700000000000LL + id);
    sqlite3_bind_int(s, 7, id % 100);
    sqlite3_bind_double(s, 8, id * 1.5);
    sqlite3_bind_int(s, 9, 0);
    sqlite3_bind_blob(s, 10, stamps, 96, SQLITE_STATIC);
    sqlite3_bind_int(s, 11, revision);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s N C [random|sorted] [transaction_size] [cache_kib] [page_size] [mmap_mib]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), c = atoi(argv[2]);
    int sorted = argc > 3 && strcmp(argv[3], "sorted") == 0;
    int chunk = argc > 4 ? atoi(argv[4]) : 0;
    int cache = argc > 5 ? atoi(argv[5]) : 32768;
    int page = argc > 6 ? atoi(argv[6]) : 4096;
    long long mmap_mib = argc > 7 ? atoll(argv[7]) : 0;
    char path[] = "/tmp/fm-floor-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    sqlite3 *db;
    must(sqlite3_open(path, &db), db, "open");
    char sql[512];
    snprintf(sql, sizeof sql,
             "PRAGMA page_size = %d; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
             "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -%d; PRAGMA mmap_size = %lld;", page, cache,
             mmap_mib << 20);
    must(sqlite3_exec(db, sql, 0, 0, 0), db, "pragmas");
    must(sqlite3_exec(db,
        "CREATE TABLE reminders (id INTEGER PRIMARY KEY, title TEXT, notes TEXT, isCompleted INTEGER,"
        " priority INTEGER, dueDate INTEGER, listID INTEGER, position REAL, flagged INTEGER,"
        " __fm_stamps BLOB NOT NULL, __fm_pending INTEGER NOT NULL DEFAULT 0, __fm_revision INTEGER,"
        " __fm_ancestor BLOB)", 0, 0, 0), db, "create");
    sqlite3_stmt *upsert;
    must(sqlite3_prepare_v2(db,
        "INSERT INTO reminders (id, title, notes, isCompleted, priority, dueDate, listID, position, flagged,"
        " __fm_stamps, __fm_pending, __fm_revision, __fm_ancestor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL)"
        " ON CONFLICT (id) DO UPDATE SET title = excluded.title, notes = excluded.notes,"
        " isCompleted = excluded.isCompleted, priority = excluded.priority, dueDate = excluded.dueDate,"
        " listID = excluded.listID, position = excluded.position, flagged = excluded.flagged,"
        " __fm_stamps = excluded.__fm_stamps, __fm_pending = excluded.__fm_pending,"
        " __fm_revision = excluded.__fm_revision, __fm_ancestor = excluded.__fm_ancestor",
        -1, &upsert, 0), db, "prepare");
    unsigned char stamps[96];
    for (int i = 0; i < 96; i++) stamps[i] = (unsigned char)(i * 7);
    char title[64];
    must(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
    for (int id = 1; id <= n; id++) {
        snprintf(title, sizeof title, "reminder %d", id);
        bind_row(upsert, id, title, stamps, 1);
        must(sqlite3_step(upsert), db, "insert");
        sqlite3_reset(upsert);
    }
    must(sqlite3_exec(db, "COMMIT; PRAGMA wal_checkpoint(TRUNCATE)", 0, 0, 0), db, "commit");

    int *ids = malloc(sizeof(int) * (size_t)c);
    srand(42);
    for (int i = 0; i < c; i++) ids[i] = 1 + rand() % n;
    int per = chunk > 0 ? chunk : c;
    if (sorted)
        for (int start = 0; start < c; start += per) qsort(ids + start, (size_t)(c - start < per ? c - start : per), sizeof(int), ascending);

    double statements = 0, commits = 0, t = now();
    must(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
    for (int i = 0; i < c; i++) {
        snprintf(title, sizeof title, "edit %d", i);
        bind_row(upsert, ids[i], title, stamps, 2);
        must(sqlite3_step(upsert), db, "upsert");
        sqlite3_reset(upsert);
        if ((i + 1) % per == 0 || i + 1 == c) {
            double before = now();
            statements += before - t;
            must(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
            t = now();
            commits += t - before;
            if (i + 1 < c) must(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
        }
    }
    printf("{\"records\":%d,\"changes\":%d,\"order\":\"%s\",\"transaction_size\":%d,\"cache_kib\":%d,\"page_size\":%d,\"mmap_mib\":%lld,"
           "\"ms\":%.1f,\"statements_ms\":%.1f,\"commits_ms\":%.1f}\n",
           n, c, sorted ? "sorted" : "random", per, cache, page, mmap_mib, (statements + commits) * 1000, statements * 1000, commits * 1000);
    sqlite3_finalize(upsert);
    sqlite3_close(db);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        unlink(file);
    }
    free(ids);
    return 0;
}
