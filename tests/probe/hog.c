/* Allocates and touches MiB mebibytes, 64 MiB at a time, then says so: a call that wants more
 * memory than its session may have (tests/tests/aggregate_bounds.rs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 0;
    const long chunk = 64;
    for (long done = 0; done < mib; done += chunk) {
        char *p = malloc(chunk << 20);
        if (!p) {
            printf("malloc failed after %ld MiB\n", done);
            return 1;
        }
        memset(p, 1, chunk << 20);
    }
    printf("touched %ld MiB\n", mib);
    return 0;
}
