/* Article 003's TinyCDB all-key read, re-run with TinyCDB's own C API: for each pass, open the
 * file (the article's CDB::TinyCDB->load), walk every entry in file order with
 * cdb_seqinit/cdb_seqnext (the article's `while (my ($k, $v) = $cdb->each)`), copying each key
 * and value out as Perl's each() hands them to the script, then close. Prints the entries
 * walked and the seconds of all passes (monotonic clock), so kvbench's get-per-key cell can be
 * put beside the walk the article timed. bench/cdb_walk.sh builds the put_add file with kvbench.
 * Usage: cdb_walk FILE PASSES */
#include <cdb.h>
#include <fcntl.h>
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

/* One pass: open, walk every entry, close; returns the entries walked (-1 on an error). */
static long walk(const char *path, unsigned long *sum) {
    static char key[1 << 16], val[1 << 16];
    struct cdb c;
    unsigned pos;
    long n = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0 || cdb_init(&c, fd) != 0) {
        perror(path);
        return -1;
    }
    cdb_seqinit(&pos, &c);
    while (cdb_seqnext(&pos, &c) > 0) {
        unsigned kl = cdb_keylen(&c), vl = cdb_datalen(&c);
        if (kl > sizeof key || vl > sizeof val) {
            fprintf(stderr, "cdb_walk: an entry over %zu bytes\n", sizeof key);
            return -1;
        }
        memcpy(key, cdb_getkey(&c), kl);
        memcpy(val, cdb_getdata(&c), vl);
        *sum += (unsigned char)key[0] + (vl ? (unsigned char)val[vl - 1] : 0u);
        n++;
    }
    cdb_free(&c);
    close(fd);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 3 || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: cdb_walk FILE PASSES (PASSES >= 1)\n");
        return 2;
    }
    int passes = atoi(argv[2]);
    unsigned long sum = 0;
    long total = 0;
    double t0 = now();
    for (int i = 0; i < passes; i++) {
        long n = walk(argv[1], &sum);
        if (n < 0)
            return 1;
        total += n;
    }
    double s = now() - t0;
    /* The checksum keeps the copies from being optimised away. */
    printf("entries %ld passes %d seconds %.3f ns_per_entry %.1f checksum %lu\n", total, passes, s,
           s * 1e9 / (total ? total : 1), sum);
    return 0;
}
