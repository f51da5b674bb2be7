/* The driver of bench/realworld_sqlite.py: runs each argument as SQL on one in-memory
 * database and prints the rows, as sqlite3's shell would (the shell's own source is not in the
 * amalgamation that better-sqlite3 bundles). `train` runs the training workload. */
#include <stdio.h>
#include <string.h>
#include "sqlite3.h"

static int print_row(void *unused, int n, char **values, char **names) {
    (void)unused;
    (void)names;
    for (int i = 0; i < n; i++)
        printf("%s%s", i ? "|" : "", values[i] ? values[i] : "NULL");
    printf("\n");
    return 0;
}

static int exec(sqlite3 *db, const char *sql, int quiet) {
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, quiet ? NULL : print_row, NULL, &err);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "error: %s\n", err ? err : sqlite3_errstr(rc));
        sqlite3_free(err);
    }
    return rc;
}

static const char *TRAIN[] = {
    "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, tag TEXT)",
    "CREATE INDEX t_name ON t(name)",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
    "INSERT INTO t(name, score, tag) SELECT printf('name%05d', (i * 7919) % 20000), "
    "(i * 31 % 1000) / 10.0, CASE i % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END FROM n",
    "CREATE TABLE u AS SELECT tag, count(*) AS n, avg(score) AS s FROM t GROUP BY tag",
    "SELECT tag, n, round(s, 2) FROM u ORDER BY tag",
    "SELECT count(*) FROM t WHERE name LIKE 'name1%' AND score > 50",
    "SELECT t.tag, max(t.score) FROM t JOIN u ON t.tag = u.tag GROUP BY t.tag",
    "UPDATE t SET score = score * 2 WHERE id % 10 = 0",
    "DELETE FROM t WHERE id % 17 = 0",
    "SELECT count(*), sum(length(name)) FROM t",
    "SELECT json_object('n', count(*), 'top', max(score)) FROM t",
    "SELECT group_concat(tag, ',') FROM (SELECT DISTINCT tag FROM t ORDER BY tag)",
    "SELECT name FROM t ORDER BY score DESC, name LIMIT 3",
    NULL,
};

int main(int argc, char **argv) {
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, "cannot open a database\n");
        return 1;
    }
    int failed = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "train") == 0) {
            for (int i = 0; TRAIN[i]; i++)
                failed |= exec(db, TRAIN[i], 0) != SQLITE_OK;
        } else {
            failed |= exec(db, argv[a], 0) != SQLITE_OK;
        }
    }
    sqlite3_close(db);
    return failed;
}
