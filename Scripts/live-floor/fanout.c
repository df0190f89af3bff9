/*
 * The floor under `fieldmerge-server bench live`: what this machine needs, with no Swift, no
 * HTTP stack, no JSON and no merge, to bring one event to N devices that share it.
 *
 *  1. Loopback: one writer sends a 700-byte event to N connected TCP sockets; N readers
 *     (one thread, epoll) take it in. Time from the first write to the last byte read.
 *  2. SQLite: N in-memory databases (one per device, as the bench's devices have), each
 *     applies the event as one upsert in its own transaction.
 *
 *   cc -O2 fanout.c -lsqlite3 -o /tmp/fanout && /tmp/fanout 1000 [rounds]
 *
 * Prints each part's median and worst over the rounds, and per device.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char *what) { perror(what); exit(1); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 21;
    struct rlimit limit = {4 * n + 64, 4 * n + 64};
    setrlimit(RLIMIT_NOFILE, &limit);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, n)) fail("listen");
    socklen_t length = sizeof address;
    getsockname(listener, (struct sockaddr *)&address, &length);
    int *client = malloc(n * sizeof(int)), *server = malloc(n * sizeof(int));
    int poll = epoll_create1(0), one = 1;
    for (int i = 0; i < n; i++) {
        client[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(client[i], (struct sockaddr *)&address, sizeof address)) fail("connect");
        server[i] = accept(listener, NULL, NULL);
        setsockopt(server[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = i};
        epoll_ctl(poll, EPOLL_CTL_ADD, client[i], &event);
    }
    char message[700], buffer[4096];
    memset(message, 'x', sizeof message);
    sqlite3 **db = malloc(n * sizeof(sqlite3 *));
    sqlite3_stmt **upsert = malloc(n * sizeof(sqlite3_stmt *));
    for (int i = 0; i < n; i++) {
        sqlite3_open(":memory:", &db[i]);
        sqlite3_exec(db[i], "CREATE TABLE lists (id INTEGER PRIMARY KEY, name TEXT, stamps BLOB, revision INTEGER)", 0, 0, 0);
        sqlite3_prepare_v2(db[i], "INSERT INTO lists VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id) DO UPDATE SET "
                                  "name = excluded.name, stamps = excluded.stamps, revision = excluded.revision", -1, &upsert[i], 0);
    }
    double *wire = malloc(rounds * sizeof(double)), *store = malloc(rounds * sizeof(double));
    struct epoll_event *ready = malloc(n * sizeof(struct epoll_event));
    char stamps[24] = {0};
    for (int r = 0; r < rounds; r++) {
        double start = now();
        for (int i = 0; i < n; i++)
            if (write(server[i], message, sizeof message) != sizeof message) fail("write");
        long received = 0;
        while (received < (long)n * (long)sizeof message) {
            int count = epoll_wait(poll, ready, n, 1000);
            for (int k = 0; k < count; k++) {
                ssize_t got = read(client[ready[k].data.u32], buffer, sizeof buffer);
                if (got > 0) received += got;
            }
        }
        wire[r] = now() - start;
        start = now();
        for (int i = 0; i < n; i++) {
            sqlite3_exec(db[i], "BEGIN", 0, 0, 0);
            sqlite3_bind_int64(upsert[i], 1, 1 + r % 50);
            sqlite3_bind_text(upsert[i], 2, "an edit from another device", -1, SQLITE_STATIC);
            sqlite3_bind_blob(upsert[i], 3, stamps, sizeof stamps, SQLITE_STATIC);
            sqlite3_bind_int64(upsert[i], 4, r + 1);
            if (sqlite3_step(upsert[i]) != SQLITE_DONE) fail("upsert");
            sqlite3_reset(upsert[i]);
            sqlite3_exec(db[i], "COMMIT", 0, 0, 0);
        }
        store[r] = now() - start;
    }
    qsort(wire, rounds, sizeof(double), cmp);
    qsort(store, rounds, sizeof(double), cmp);
    printf("%d devices, %d rounds\n", n, rounds);
    printf("loopback fan-out: median %.2f ms, worst %.2f ms (%.1f us per device)\n", wire[rounds / 2] * 1e3,
           wire[rounds - 1] * 1e3, wire[rounds / 2] * 1e6 / n);
    printf("sqlite apply:     median %.2f ms, worst %.2f ms (%.1f us per device)\n", store[rounds / 2] * 1e3,
           store[rounds - 1] * 1e3, store[rounds / 2] * 1e6 / n);
    printf("together:         median %.2f ms\n", (wire[rounds / 2] + store[rounds / 2]) * 1e3);
    return 0;
}
