/* Escape probe for the sandbox suite: each subcommand attempts one forbidden thing and prints
 * "BLOCKED <what> errno=<n> (<text>)" and exits 0 if the kernel refused it, or "ESCAPED <what>" and
 * exits 1 if it worked. Compiled by the test suite with the system C compiler. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static int verdict(const char *what, long rc) {
    if (rc < 0) {
        printf("BLOCKED %s errno=%d (%s)\n", what, errno, strerror(errno));
        return 0;
    }
    printf("ESCAPED %s\n", what);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: probe WHAT [ARG]\n"); return 2; }
    const char *w = argv[1];
    const char *arg = argc > 2 ? argv[2] : "";
    if (!strcmp(w, "tcp")) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) return verdict("tcp socket", s);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(arg)) };
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        return verdict("tcp connect", connect(s, (struct sockaddr *)&a, sizeof a));
    }
    if (!strcmp(w, "udp")) {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        if (s < 0) return verdict("udp socket", s);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(arg)) };
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        return verdict("udp send", sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a));
    }
    if (!strcmp(w, "unix") || !strcmp(w, "abstract")) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (s < 0) return verdict("unix socket", s);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        socklen_t len;
        if (!strcmp(w, "unix")) {
            strncpy(a.sun_path, arg, sizeof a.sun_path - 1);
            len = sizeof a;
        } else {
            strncpy(a.sun_path + 1, arg, sizeof a.sun_path - 2);
            len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(arg);
        }
        return verdict("unix connect", connect(s, (struct sockaddr *)&a, len));
    }
    if (!strcmp(w, "io_uring")) {
        char params[120] = {0};
        return verdict("io_uring_setup", syscall(SYS_io_uring_setup, 8, params));
    }
    if (!strcmp(w, "bpf")) {
        union bpf_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_ARRAY; attr.key_size = 4; attr.value_size = 4; attr.max_entries = 1;
        return verdict("bpf", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
    }
    if (!strcmp(w, "userfaultfd")) return verdict("userfaultfd", syscall(SYS_userfaultfd, 0));
    if (!strcmp(w, "keyctl")) return verdict("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
    if (!strcmp(w, "ptrace")) return verdict("ptrace attach", ptrace(PTRACE_ATTACH, atoi(arg), 0, 0));
    if (!strcmp(w, "perf")) {
        struct perf_event_attr pe;
        memset(&pe, 0, sizeof pe);
        pe.type = PERF_TYPE_SOFTWARE; pe.size = sizeof pe; pe.config = PERF_COUNT_SW_CPU_CLOCK;
        return verdict("perf_event_open", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
    }
    if (!strcmp(w, "kill")) return verdict("kill", kill(atoi(arg), SIGKILL));
    if (!strcmp(w, "userns")) return verdict("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
    if (!strcmp(w, "clone-newuser")) {
        long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (rc == 0) _exit(0);
        return verdict("clone(CLONE_NEWUSER)", rc);
    }
    if (!strcmp(w, "x32")) return verdict("x32 getpid", syscall(0x40000000 | SYS_getpid));
    if (!strcmp(w, "alloc")) {
        size_t n = strtoull(arg, 0, 10);
        char *p = malloc(n);
        if (!p) { errno = ENOMEM; return verdict("malloc", -1); }
        memset(p, 1, n);
        return verdict("malloc", 0);
    }
    fprintf(stderr, "unknown probe %s\n", w);
    return 2;
}
