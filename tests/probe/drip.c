/* drip COUNT PAUSE_US: writes COUNT bytes to stdout one byte per write(2), with a pause of
 * PAUSE_US microseconds after each (spent spinning: a sleep that short lasts ten times longer),
 * the way a slow or hostile program can drip its output. The bytes cycle through PATTERN, whose
 * multi-byte characters are thus split across writes; a COUNT that is a multiple of its length
 * ends on a whole character. Compiled by the test suite (tests/tests/output_drip.rs). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PATTERN "drip-0123456789 é ✓ abcdefghijklmnopqrstuvwxyz\n"

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    long count = atol(argv[1]);
    long pause_ns = atol(argv[2]) * 1000;
    size_t len = strlen(PATTERN);
    for (long i = 0; i < count; i++) {
        if (write(1, &PATTERN[i % len], 1) != 1) return 1;
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do clock_gettime(CLOCK_MONOTONIC, &now);
        while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec < pause_ns);
    }
    return 0;
}
