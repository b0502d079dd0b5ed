/* Probe for the ways a call could reach or hinder other processes through files and Unix sockets
 * it may create without socket(): file leases and socketpair ends. Same verdicts as probe.c:
 * "BLOCKED <what> errno=<n> (<text>)" when refused, "ESCAPED <what>" when a forbidden thing
 * worked, "ALLOWED <what>" when a harmless form worked. Compiled by the test suite.
 *
 *   ipc_probe setlease PATH      a write lease, then a read lease, on PATH (opened read-only)
 *   ipc_probe getlease PATH      F_GETLEASE on PATH: harmless, must work
 *   ipc_probe pair TYPE TARGET   socketpair(AF_UNIX, TYPE); for a datagram type, sendto TARGET
 *                                and connect to it; for a connected type, the pair must carry
 *                                a message, and sendto/connect TARGET must not reach it
 *   ipc_probe bind TYPE NAME     socketpair(AF_UNIX, TYPE), then bind one end to NAME
 *   ipc_probe pair-domain DOMAIN socketpair(DOMAIN, SOCK_STREAM) for a domain other than AF_UNIX
 *
 * TYPE: stream, seqpacket, dgram, raw (AF_UNIX turns SOCK_RAW into SOCK_DGRAM), dgram-flags
 * (SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC), stream-flags. TARGET and NAME: a path, or @name
 * for the abstract namespace. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

static int allowed(const char *what, long rc) {
    if (rc < 0) {
        printf("FAILED %s errno=%d (%s)\n", what, errno, strerror(errno));
        return 1;
    }
    printf("ALLOWED %s\n", what);
    return 0;
}

static int type_of(const char *name) {
    if (!strcmp(name, "stream")) return SOCK_STREAM;
    if (!strcmp(name, "stream-flags")) return SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
    if (!strcmp(name, "seqpacket")) return SOCK_SEQPACKET;
    if (!strcmp(name, "dgram")) return SOCK_DGRAM;
    if (!strcmp(name, "dgram-flags")) return SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
    if (!strcmp(name, "raw")) return SOCK_RAW;
    fprintf(stderr, "unknown type %s\n", name);
    exit(2);
}

static socklen_t address(const char *target, struct sockaddr_un *a) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (target[0] == '@') {
        strncpy(a->sun_path + 1, target + 1, sizeof a->sun_path - 2);
        return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(target + 1);
    }
    strncpy(a->sun_path, target, sizeof a->sun_path - 1);
    return sizeof *a;
}

static int lease(const char *path) {
    signal(SIGIO, SIG_IGN); /* a lease break would otherwise end the probe */
    int failed = 0;
    const struct { int type; const char *name; } kinds[] = {{F_WRLCK, "F_WRLCK"}, {F_RDLCK, "F_RDLCK"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) { perror(path); return 2; }
        char what[256];
        snprintf(what, sizeof what, "setlease %s %s", kinds[i].name, path);
        int rc = fcntl(fd, F_SETLEASE, kinds[i].type);
        failed |= verdict(what, rc);
        if (rc == 0) fcntl(fd, F_SETLEASE, F_UNLCK);
        close(fd);
    }
    return failed;
}

static int pair(const char *type_name, const char *target) {
    int type = type_of(type_name), sv[2];
    char what[256];
    snprintf(what, sizeof what, "socketpair %s", type_name);
    int connected = (type & 0xf) == SOCK_STREAM || (type & 0xf) == SOCK_SEQPACKET;
    if (socketpair(AF_UNIX, type, 0, sv) < 0) {
        if (connected) return allowed(what, -1);
        return verdict(what, -1);
    }
    struct sockaddr_un a;
    socklen_t len = address(target, &a);
    const char msg[] = "from-the-sandbox";
    if (!connected) {
        printf("ESCAPED %s\n", what);
        long sent = sendto(sv[0], msg, sizeof msg - 1, 0, (struct sockaddr *)&a, len);
        printf("sendto %s rc=%ld errno=%d\n", target, sent, sent < 0 ? errno : 0);
        long c = connect(sv[1], (struct sockaddr *)&a, len);
        printf("connect %s rc=%ld errno=%d\n", target, c, c < 0 ? errno : 0);
        if (c == 0) printf("send after connect rc=%ld\n", (long)send(sv[1], msg, sizeof msg - 1, 0));
        return 1;
    }
    /* A connected pair carries a message between its ends... */
    char buf[64];
    long n = write(sv[0], "ping", 4);
    long got = n == 4 ? read(sv[1], buf, sizeof buf) : -1;
    int failed = allowed(what, got == 4 && !memcmp(buf, "ping", 4) ? 0 : -1);
    /* ...and nowhere else: an address given to sendto or connect is refused or ignored. */
    long sent = sendto(sv[0], msg, sizeof msg - 1, MSG_DONTWAIT, (struct sockaddr *)&a, len);
    printf("sendto %s rc=%ld errno=%d\n", target, sent, sent < 0 ? errno : 0);
    long c = connect(sv[0], (struct sockaddr *)&a, len);
    printf("connect %s rc=%ld errno=%d\n", target, c, c < 0 ? errno : 0);
    /* Once its peer is gone the end stays connected, to nothing: still no way out. */
    close(sv[1]);
    c = connect(sv[0], (struct sockaddr *)&a, len);
    printf("connect after the peer closed %s rc=%ld errno=%d\n", target, c, c < 0 ? errno : 0);
    fflush(stdout);
    return failed;
}

static int bind_name(const char *type_name, const char *name) {
    int sv[2];
    char what[256];
    snprintf(what, sizeof what, "socketpair %s", type_name);
    if (socketpair(AF_UNIX, type_of(type_name), 0, sv) < 0) return allowed(what, -1);
    struct sockaddr_un a;
    socklen_t len = address(name, &a);
    snprintf(what, sizeof what, "bind %s %s", type_name, name);
    int rc = bind(sv[0], (struct sockaddr *)&a, len);
    int escaped = verdict(what, rc);
    if (rc == 0) {
        fflush(stdout);
        sleep(1); /* hold the name a moment, for whoever looks */
    }
    return escaped;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "setlease")) return lease(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "getlease")) {
        int fd = open(argv[2], O_RDONLY);
        if (fd < 0) { perror(argv[2]); return 2; }
        int rc = fcntl(fd, F_GETLEASE);
        char what[256];
        snprintf(what, sizeof what, "getlease %s", argv[2]);
        return allowed(what, rc);
    }
    if (argc == 4 && !strcmp(argv[1], "pair")) return pair(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "bind")) return bind_name(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "pair-domain")) {
        int domain = !strcmp(argv[2], "inet") ? AF_INET : !strcmp(argv[2], "netlink") ? AF_NETLINK : -1;
        if (domain < 0) { fprintf(stderr, "unknown domain %s\n", argv[2]); return 2; }
        int sv[2];
        char what[64];
        snprintf(what, sizeof what, "socketpair-domain %s", argv[2]);
        return verdict(what, socketpair(domain, SOCK_STREAM, 0, sv));
    }
    fprintf(stderr, "usage: see the comment at the top of ipc_probe.c\n");
    return 2;
}
