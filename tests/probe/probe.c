/* Escape probe for the sandbox suite: each subcommand attempts one forbidden thing and prints
 * "BLOCKED <what> errno=<n> (<text>)" and exits 0 if the kernel refused it, or "ESCAPED <what>" and
 * exits 1 if it worked. Compiled by the test suite with the system C compiler. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
/* From <sys/fanotify.h>, spelt out so the probe builds without it. */
#define PROBE_FAN_CLASS_NOTIF 0x00000000
#define PROBE_FAN_REPORT_FID 0x00000200

static int verdict(const char *what, long rc) {
    if (rc < 0) {
        printf("BLOCKED %s errno=%d (%s)\n", what, errno, strerror(errno));
        return 0;
    }
    printf("ESCAPED %s\n", what);
    return 1;
}

/* For attempts that are harmless with some arguments (a mode without set-id bits): "ALLOWED" and
 * exit 0 when that harmless form worked, so a test can run the same call as its own sanity check. */
static int attempt(const char *what, long rc, int forbidden) {
    if (rc >= 0 && !forbidden) {
        printf("ALLOWED %s\n", what);
        return 0;
    }
    return verdict(what, rc);
}

/* The mode attempts: `probe NAME MODE PATH`, MODE in octal. Returns -1 when NAME is not one. */
static int mode_probe(const char *w, const char *mode_text, const char *path) {
    unsigned mode = (unsigned)strtoul(mode_text, 0, 8);
    int forbidden = (mode & (S_ISUID | S_ISGID)) != 0;
    char what[128];
    snprintf(what, sizeof what, "%s %s", w, mode_text);
    if (!strcmp(w, "chmod")) return attempt(what, syscall(SYS_chmod, path, mode), forbidden);
    if (!strcmp(w, "fchmodat")) return attempt(what, syscall(SYS_fchmodat, AT_FDCWD, path, mode), forbidden);
    if (!strcmp(w, "fchmodat2")) return attempt(what, syscall(SYS_fchmodat2, AT_FDCWD, path, mode, 0), forbidden);
    if (!strcmp(w, "fchmod")) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) { perror(path); return 2; }
        return attempt(what, syscall(SYS_fchmod, fd, mode), forbidden);
    }
    if (!strcmp(w, "open"))
        return attempt(what, syscall(SYS_open, path, O_WRONLY | O_CREAT | O_EXCL, mode), forbidden);
    if (!strcmp(w, "openat"))
        return attempt(what, syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL, mode), forbidden);
    if (!strcmp(w, "creat")) return attempt(what, syscall(SYS_creat, path, mode), forbidden);
    if (!strcmp(w, "tmpfile")) {
        /* An unnamed file in directory PATH, then linked in as PATH/tmpfile-linked. */
        long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_TMPFILE, mode);
        if (fd < 0 || !forbidden) return attempt(what, fd, forbidden);
        char from[64], to[4096];
        snprintf(from, sizeof from, "/proc/self/fd/%ld", fd);
        snprintf(to, sizeof to, "%s/tmpfile-linked", path);
        linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
        return verdict(what, fd);
    }
    if (!strcmp(w, "openat2")) {
        struct { uint64_t flags, mode, resolve; } how = { O_WRONLY | O_CREAT | O_EXCL, mode, 0 };
        return attempt(what, syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how), forbidden);
    }
    if (!strcmp(w, "mknod")) return attempt(what, syscall(SYS_mknod, path, S_IFIFO | mode, 0), forbidden);
    if (!strcmp(w, "mknodat-reg"))
        return attempt(what, syscall(SYS_mknodat, AT_FDCWD, path, S_IFREG | mode, 0), forbidden);
    /* The kernel drops set-id bits given to mkdir; "ALLOWED" here says nothing about the result. */
    if (!strcmp(w, "mkdir")) return attempt(what, syscall(SYS_mkdir, path, mode), 0);
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: probe WHAT [ARG [PATH]]\n"); return 2; }
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
    if (argc > 3) {
        int rc = mode_probe(w, arg, argv[3]);
        if (rc >= 0) return rc;
    }
    if (!strcmp(w, "modify_ldt")) {
        char ldt[16];
        return verdict("modify_ldt", syscall(SYS_modify_ldt, 0, ldt, sizeof ldt));
    }
    if (!strcmp(w, "fanotify_init"))
        return verdict("fanotify_init",
                       syscall(SYS_fanotify_init, PROBE_FAN_CLASS_NOTIF | PROBE_FAN_REPORT_FID, O_RDONLY));
    if (!strcmp(w, "pidfd_getfd")) {
        /* Its own stdin, through a pidfd of itself: the kernel always allows that much. */
        long pidfd = syscall(SYS_pidfd_open, getpid(), 0);
        if (pidfd < 0) return verdict("pidfd_open", pidfd);
        return verdict("pidfd_getfd", syscall(SYS_pidfd_getfd, pidfd, 0, 0));
    }
    if (!strcmp(w, "memfd_secret")) return verdict("memfd_secret", syscall(SYS_memfd_secret, 0));
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
