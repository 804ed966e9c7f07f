/* The minimal libpq INSERT loop bench/postgres.sh sets beside kvbench's `load = "insert"` row:
 * reads every (k, v) of SRC into memory (untimed), then in one transaction runs one prepared
 * INSERT per row into DST and prints the rows per second from BEGIN to COMMIT and the process's
 * CPU time per row (µs) over the same span.
 * Usage: pg_insert CONNINFO SRC DST */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(PGconn *c, PGresult *r, ExecStatusType want, const char *what) {
    if (PQresultStatus(r) != want) {
        fprintf(stderr, "pg_insert: %s: %s", what, PQerrorMessage(c));
        exit(1);
    }
}

static void run(PGconn *c, const char *sql) {
    PGresult *r = PQexec(c, sql);
    check(c, r, PGRES_COMMAND_OK, sql);
    PQclear(r);
}

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: pg_insert CONNINFO SRC DST\n");
        return 2;
    }
    PGconn *c = PQconnectdb(argv[1]);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pg_insert: connect: %s", PQerrorMessage(c));
        return 1;
    }
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT k, v FROM %s", argv[2]);
    PGresult *rows = PQexec(c, sql);
    check(c, rows, PGRES_TUPLES_OK, sql);
    snprintf(sql, sizeof sql, "INSERT INTO %s (k, v) VALUES ($1, $2)", argv[3]);
    PGresult *p = PQprepare(c, "ins", sql, 2, NULL);
    check(c, p, PGRES_COMMAND_OK, "prepare");
    PQclear(p);
    int n = PQntuples(rows);
    double t0 = now(), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    run(c, "BEGIN");
    for (int i = 0; i < n; i++) {
        const char *params[2] = {PQgetvalue(rows, i, 0), PQgetvalue(rows, i, 1)};
        PGresult *r = PQexecPrepared(c, "ins", 2, params, NULL, NULL, 0);
        check(c, r, PGRES_COMMAND_OK, "INSERT");
        PQclear(r);
    }
    run(c, "COMMIT");
    double dt = now() - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    printf("%.0f %.2f\n", n / dt, cpu / n * 1e6);
    PQclear(rows);
    PQfinish(c);
    return 0;
}
