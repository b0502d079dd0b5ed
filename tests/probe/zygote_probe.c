/* Attempts against the zygote design, run inside a sandbox (and outside, for comparison).
 * Prints one line per attempt: `<what> rc=<rc> errno=<errno>`, and `END` last.
 *   zygote_probe syscalls     every early and late seccomp entry, with arguments the kernel
 *                             alone would answer with something other than EPERM, and an
 *                             i386 syscall (int 0x80), which the prologue kills
 *   zygote_probe zygote PID   ptrace, signals, pidfds, descriptors and memory of process PID
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *what, long rc) {
    printf("%s rc=%ld errno=%d\n", what, rc, rc < 0 ? errno : 0);
    fflush(stdout);
}

#define TRY(what, call) do { errno = 0; long rc_ = (long)(call); report(what, rc_); } while (0)

static int syscalls(void) {
    char buf[16];
    struct iovec local = {buf, sizeof buf}, remote = {buf, sizeof buf};
    /* The early part (installed once by the zygote). */
    TRY("ptrace", syscall(SYS_ptrace, PTRACE_PEEKDATA, 999999, 0, 0));
    TRY("process_vm_readv", syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0));
    TRY("process_vm_writev", syscall(SYS_process_vm_writev, getpid(), &local, 1, &remote, 1, 0));
    TRY("pidfd_getfd", syscall(SYS_pidfd_getfd, -1, 0, 0));
    TRY("io_uring_setup", syscall(SYS_io_uring_setup, 0, NULL));
    TRY("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
    TRY("io_uring_register", syscall(SYS_io_uring_register, -1, 0, NULL, 0));
    TRY("bpf", syscall(SYS_bpf, -1, NULL, 0));
    TRY("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
    TRY("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0));
    TRY("add_key", syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));
    TRY("request_key", syscall(SYS_request_key, NULL, NULL, NULL, 0));
    TRY("userfaultfd", syscall(SYS_userfaultfd, -1));
    TRY("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, ".", NULL, NULL, 0));
    TRY("modify_ldt", syscall(SYS_modify_ldt, 0, buf, sizeof buf));
    TRY("personality", syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */));
    TRY("ioctl_tiocsti", syscall(SYS_ioctl, -1, TIOCSTI, buf));
    TRY("fchmodat_setuid", syscall(SYS_fchmodat, AT_FDCWD, "zp-target", 04755));
    TRY("openat_creat_setgid", syscall(SYS_openat, AT_FDCWD, "zp-created", O_CREAT | O_WRONLY, 02755));
    TRY("x32_getpid", syscall(0x40000000 | SYS_getpid));
    TRY("clone3", syscall(SYS_clone3, NULL, 0));
    TRY("openat2", syscall(SYS_openat2, AT_FDCWD, NULL, NULL, 0));
    /* open_tree_attr (467, Linux 6.15): newer than most headers. */
    TRY("open_tree_attr", syscall(467, AT_FDCWD, ".", 0, NULL, 0));
    /* The late part (installed by each worker at the end of its lockdown). */
    TRY("unshare_none", syscall(SYS_unshare, 0));
    TRY("setns", syscall(SYS_setns, -1, 0));
    TRY("open_tree", syscall(SYS_open_tree, AT_FDCWD, ".", 0));
    TRY("fsconfig", syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0));
    TRY("mount_setattr", syscall(SYS_mount_setattr, -1, "", 0, NULL, 0));
    TRY("clone_newuser", ({
        long c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (c == 0) _exit(0);
        c;
    }));
    TRY("socket_unix", syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0));
    TRY("socket_netlink", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0));
    /* A 32-bit syscall (i386 getpid through int 0x80): a foreign architecture for the filter,
     * which kills the process. Reported as rc = the child's exit code, or -signal. */
    {
        pid_t child = fork();
        if (child == 0) {
            long ret;
            __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
            _exit(ret > 0 ? 0 : 1);
        }
        int status = 0;
        waitpid(child, &status, 0);
        printf("int80_getpid rc=%d errno=0\n",
               WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status));
        fflush(stdout);
    }
    /* Harmless, must work everywhere. */
    TRY("getpid", syscall(SYS_getpid));
    TRY("socketpair", ({ int sv[2]; syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv); }));
    TRY("fchmodat_plain", syscall(SYS_fchmodat, AT_FDCWD, "zp-target", 0755));
    puts("END");
    return 0;
}

static int zygote(pid_t pid) {
    char path[64], buf[16];
    struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
    TRY("z_ptrace_attach", ptrace(PTRACE_ATTACH, pid, 0, 0));
    TRY("z_kill0", kill(pid, 0));
    TRY("z_pidfd_open", syscall(SYS_pidfd_open, pid, 0));
    snprintf(path, sizeof path, "/proc/%d", pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY);
    report("z_open_proc_dir", dir);
    if (dir >= 0) TRY("z_pidfd_send_signal", syscall(SYS_pidfd_send_signal, dir, SIGKILL, NULL, 0));
    TRY("z_process_vm_readv", syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0));
    for (int fd = 0; fd < 128; fd++) {
        char what[32];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
        errno = 0;
        int opened = open(path, O_PATH);
        if (opened >= 0 || errno != ENOENT) {
            snprintf(what, sizeof what, "z_fd_%d", fd);
            report(what, opened);
        }
    }
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    TRY("z_mem", open(path, O_RDWR));
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    TRY("z_status", open(path, O_RDONLY)); /* sanity: the process is there and visible */
    puts("END");
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "syscalls")) return syscalls();
    if (argc >= 3 && !strcmp(argv[1], "zygote")) return zygote(atoi(argv[2]));
    fprintf(stderr, "usage: zygote_probe syscalls | zygote PID\n");
    return 2;
}
