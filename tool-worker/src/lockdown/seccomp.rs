//! The seccomp filter: one table, a reason per entry, built by a pure function that tests inspect
//! without installing it.
//!
//! Two filters are installed (the kernel runs both; the strictest answer wins):
//! 1. a short prologue, written as BPF by hand because seccompiler cannot express it: kill the
//!    process on a foreign architecture, refuse x32 syscall numbers (bit 30 set: the same kernel
//!    entry points under other numbers, which a table keyed by x86-64 numbers would miss), and
//!    answer ENOSYS to the two calls whose arguments sit in a struct seccomp cannot read, so libc
//!    and careful callers fall back to the older call we can inspect: `clone3` (→ `clone`, whose
//!    namespace flags the table checks) and `openat2` (→ `openat`, whose mode the table checks);
//! 2. the table below, compiled by seccompiler: EPERM where a rule matches, allow otherwise.
//!
//! No set-uid/set-gid bit can be set. Without `CAP_FSETID` the owner of a file may still give it
//! S_ISUID, and as root (capabilities cleared) that makes a set-uid-root program that a later,
//! unsandboxed run would execute with full privileges. So, as systemd's `RestrictSUIDSGID=` does,
//! the `chmod` family is refused when the mode carries S_ISUID or S_ISGID, and so are
//! `open`/`openat`/`creat`/`mknod`/`mknodat` creating a file with them (`O_CREAT` or, unlike
//! systemd, `O_TMPFILE`: an unnamed file can be linked in later). seccomp sees a number, not
//! whether the path is a directory, so `chmod g+s dir` is refused too; shared group directories
//! are an administrator's set-up, not a build step's. `mkdir`/`mkdirat` need no rule (systemd has
//! one): the kernel keeps only the permission bits and S_ISVTX of their mode, which the escape
//! suite checks.
//!
//! Nothing a call does may make another process's `open` of a file block or fail: that is what a
//! file lease does (`fcntl(F_SETLEASE)`: while it is held, every other open of the file waits up
//! to `lease-break-time`, or fails with EWOULDBLOCK when non-blocking), and the tool owns the
//! workspace's files, `.git/config` included, that the supervisor and the next call scan. So
//! `F_SETLEASE` is refused; `F_GETLEASE` is harmless. The other `fcntl` commands were checked for
//! the same effect and have none: record locks (`F_SETLK`, `F_OFD_SETLK`, and `flock`) are
//! advisory, which `open` never consults (mandatory locking, which did, left Linux in 5.15 and
//! needed a set-gid file the table cannot make); `F_NOTIFY` (dnotify) only signals the caller
//! about changes in a directory it can read, as inotify does; `F_SETOWN`/`F_SETSIG` aim signals
//! at processes the call can name, in its own PID namespace; `F_ADD_SEALS` applies only to
//! memfds made with sealing allowed, the call's own. There is no `fcntl64` on x86-64 (the i386
//! one is killed by the prologue).
//!
//! A `socketpair` is a connected `AF_UNIX` stream or seqpacket pair, or nothing: a datagram end
//! can `sendto` or `connect` any socket it can name (path sockets in the call's view; the host's
//! abstract ones where Landlock sets no scopes), and `AF_UNIX` makes `SOCK_RAW` a datagram socket,
//! so the type is allowed by list, `SOCK_NONBLOCK`/`SOCK_CLOEXEC` aside. Another domain only
//! fails after the kernel has made (and perhaps loaded the module of) a socket `socket()` would
//! be refused. A connected end stays connected, to its peer or to nothing: `connect` answers
//! EISCONN and `sendto` EISCONN or ignores the address. It can still be bound to a name, which
//! takes the name in the host's abstract namespace from its owner while the call runs, so without
//! network (no `socket()`, nothing else to bind) `bind` is refused too; with network it stays,
//! for servers, and seccomp cannot read the address to tell the two apart.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};
use std::collections::BTreeMap;

/// When a syscall is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Always.
    Always,
    /// When argument `arg` (low 32 bits) equals one of `values`.
    ArgIn { arg: u8, values: &'static [u64] },
    /// When argument `arg` (low 32 bits) equals none of `values`.
    ArgNotIn { arg: u8, values: &'static [u64] },
    /// When any of these arguments (low 32 bits) equals none of its values.
    AnyArgNotIn(&'static [(u8, &'static [u64])]),
    /// When argument `arg` has any of these bits set.
    AnyBit { arg: u8, bits: &'static [u64] },
    /// When argument `mode` has S_ISUID or S_ISGID set and, if `create` names a flags argument,
    /// that argument asks for a new file (`O_CREAT` or `O_TMPFILE`): the mode is only used then.
    SetIdMode { mode: u8, create: Option<u8> },
}

/// One entry of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The syscall.
    pub name: &'static str,
    /// Its number on x86-64.
    pub nr: i64,
    /// When it is refused with EPERM.
    pub when: When,
    /// Who would use it against us.
    pub why: &'static str,
}

const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// The set-user-ID and set-group-ID mode bits.
const SET_ID_BITS: &[u64] = &[libc::S_ISUID as u64, libc::S_ISGID as u64];

/// The `open` flags that make it create a file and use its mode: `O_CREAT`, and `O_TMPFILE`'s own
/// bit (the kernel's `__O_TMPFILE`; `O_TMPFILE` itself also holds `O_DIRECTORY`).
const CREATE_FLAGS: &[u64] = &[
    libc::O_CREAT as u64,
    (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64,
];

/// `personality()` values that change nothing dangerous: PER_LINUX, PER_LINUX32 and the query.
const HARMLESS_PERSONALITIES: &[u64] = &[0, 0x0008, 0xffff_ffff];

/// Socket domains a tool may create when network is granted (`socketpair`: see [`PAIR_TYPES`]).
const NETWORK_DOMAINS: &[u64] = &[libc::AF_INET as u64, libc::AF_INET6 as u64];

/// The `socketpair` types allowed, with or without `SOCK_NONBLOCK` and `SOCK_CLOEXEC`: the
/// connected ones, whose ends reach only each other. Not `SOCK_DGRAM`, nor `SOCK_RAW`, which
/// `AF_UNIX` turns into `SOCK_DGRAM`.
const PAIR_TYPES: &[u64] = &[
    libc::SOCK_STREAM as u64,
    (libc::SOCK_STREAM | libc::SOCK_NONBLOCK) as u64,
    (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as u64,
    (libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) as u64,
    libc::SOCK_SEQPACKET as u64,
    (libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK) as u64,
    (libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC) as u64,
    (libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) as u64,
];

/// `socketpair`'s domain and type: a connected `AF_UNIX` pair.
const PAIR_ARGS: &[(u8, &[u64])] = &[(0, &[libc::AF_UNIX as u64]), (1, PAIR_TYPES)];

macro_rules! set_id {
    ($name:ident, mode = $mode:expr, create = $create:expr, $why:expr) => {
        Entry {
            name: stringify!($name),
            nr: libc::$name,
            when: When::SetIdMode {
                mode: $mode,
                create: $create,
            },
            why: $why,
        }
    };
}

/// Why set-id bits are refused, shared by every entry that could set them.
const SET_ID_WHY: &str = "the owner may set S_ISUID/S_ISGID without CAP_FSETID: a set-uid (as root, set-uid-root) program planted for a later run outside the sandbox";

/// `open_tree_attr` on x86-64 (the prologue kills every other architecture); newer than the
/// `libc` crate's list. The table is a deny list: a syscall a newer kernel adds is allowed until
/// it is named here, so each new one is read and placed (`listmount`, `statmount`, `mseal`,
/// `file_getattr`/`file_setattr` only read or set what the read-only mounts and Landlock
/// already decide).
const SYS_OPEN_TREE_ATTR: i64 = 467;

macro_rules! always {
    ($name:ident, $why:expr) => {
        Entry {
            name: stringify!($name),
            nr: libc::$name,
            when: When::Always,
            why: $why,
        }
    };
}

/// The table. `network` decides whether TCP/UDP sockets may be created.
pub fn table(network: bool) -> Vec<Entry> {
    use libc::*;
    let mut t = vec![
        always!(
            SYS_ptrace,
            "reading or steering other processes, the supervisor included"
        ),
        always!(SYS_process_vm_readv, "reading another process's memory"),
        always!(SYS_process_vm_writev, "writing another process's memory"),
        always!(
            SYS_pidfd_getfd,
            "copying another process's file descriptors: ptrace's access check, ptrace's reach"
        ),
        always!(
            SYS_io_uring_setup,
            "io_uring performs I/O that seccomp never sees"
        ),
        always!(
            SYS_io_uring_enter,
            "io_uring performs I/O that seccomp never sees"
        ),
        always!(
            SYS_io_uring_register,
            "io_uring performs I/O that seccomp never sees"
        ),
        always!(SYS_bpf, "loading programs into the kernel"),
        always!(
            SYS_perf_event_open,
            "kernel profiling: side channels and a long CVE history"
        ),
        always!(SYS_kexec_load, "replacing the running kernel"),
        always!(SYS_kexec_file_load, "replacing the running kernel"),
        always!(SYS_init_module, "loading kernel modules"),
        always!(SYS_finit_module, "loading kernel modules"),
        always!(SYS_delete_module, "unloading kernel modules"),
        always!(SYS_mount, "changing what paths mean"),
        always!(SYS_umount2, "changing what paths mean"),
        always!(SYS_pivot_root, "changing what paths mean"),
        always!(SYS_chroot, "changing what paths mean"),
        always!(SYS_fsopen, "the new mount API"),
        always!(SYS_fsconfig, "the new mount API"),
        always!(SYS_fsmount, "the new mount API"),
        always!(SYS_fspick, "the new mount API"),
        always!(SYS_move_mount, "the new mount API"),
        always!(SYS_open_tree, "the new mount API"),
        Entry {
            name: "open_tree_attr",
            nr: SYS_OPEN_TREE_ATTR,
            when: When::Always,
            why: "the new mount API (open_tree with mount attributes, Linux 6.15)",
        },
        always!(SYS_mount_setattr, "the new mount API"),
        always!(
            SYS_unshare,
            "new namespaces: a user namespace would regain capabilities"
        ),
        always!(SYS_setns, "entering other namespaces"),
        always!(
            SYS_keyctl,
            "the kernel keyring holds other processes' secrets"
        ),
        always!(
            SYS_add_key,
            "the kernel keyring holds other processes' secrets"
        ),
        always!(
            SYS_request_key,
            "the kernel keyring holds other processes' secrets"
        ),
        always!(
            SYS_userfaultfd,
            "pausing kernel code at will: a building block of kernel exploits"
        ),
        always!(SYS_acct, "process accounting is system-wide"),
        always!(SYS_swapon, "system-wide"),
        always!(SYS_swapoff, "system-wide"),
        always!(SYS_reboot, "system-wide"),
        always!(SYS_settimeofday, "the clock is system-wide"),
        always!(SYS_clock_settime, "the clock is system-wide"),
        always!(SYS_clock_adjtime, "the clock is system-wide"),
        always!(SYS_adjtimex, "the clock is system-wide"),
        always!(SYS_quotactl, "disk quotas are system-wide"),
        always!(SYS_quotactl_fd, "disk quotas are system-wide"),
        always!(
            SYS_open_by_handle_at,
            "opens files by inode handle, around path checks"
        ),
        always!(SYS_name_to_handle_at, "the other half of open_by_handle_at"),
        always!(SYS_lookup_dcookie, "kernel internals"),
        always!(SYS_uselib, "obsolete loader entry point"),
        always!(SYS_vhangup, "hangs up the terminal of other processes"),
        always!(SYS_iopl, "raw I/O port access"),
        always!(SYS_ioperm, "raw I/O port access"),
        always!(
            SYS_syslog,
            "the kernel log can hold addresses and other users' data"
        ),
        always!(
            SYS_modify_ldt,
            "16-bit segments for DOS and Wine: a kernel attack surface no build needs"
        ),
        always!(
            SYS_fanotify_init,
            "file-access events across a whole mount (unprivileged since Linux 5.13)"
        ),
        always!(
            SYS_memfd_secret,
            "memory hidden even from the kernel: code no one can inspect"
        ),
        set_id!(SYS_chmod, mode = 1, create = None, SET_ID_WHY),
        set_id!(SYS_fchmod, mode = 1, create = None, SET_ID_WHY),
        set_id!(SYS_fchmodat, mode = 2, create = None, SET_ID_WHY),
        set_id!(SYS_fchmodat2, mode = 2, create = None, SET_ID_WHY),
        set_id!(SYS_open, mode = 2, create = Some(1), SET_ID_WHY),
        set_id!(SYS_openat, mode = 3, create = Some(2), SET_ID_WHY),
        set_id!(SYS_creat, mode = 1, create = None, SET_ID_WHY),
        set_id!(SYS_mknod, mode = 1, create = None, SET_ID_WHY),
        set_id!(SYS_mknodat, mode = 2, create = None, SET_ID_WHY),
        Entry {
            name: "personality",
            nr: SYS_personality,
            when: When::ArgNotIn {
                arg: 0,
                values: HARMLESS_PERSONALITIES,
            },
            why: "READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE weaken memory protections",
        },
        Entry {
            name: "ioctl",
            nr: SYS_ioctl,
            when: When::ArgIn {
                arg: 1,
                values: &[TIOCSTI, TIOCLINUX],
            },
            why: "TIOCSTI/TIOCLINUX push keystrokes into a terminal another process reads",
        },
        Entry {
            name: "clone",
            nr: SYS_clone,
            when: When::AnyBit {
                arg: 0,
                bits: NAMESPACE_FLAGS,
            },
            why: "new namespaces: a user namespace would regain capabilities",
        },
        Entry {
            name: "fcntl",
            nr: SYS_fcntl,
            when: When::ArgIn {
                arg: 1,
                values: &[F_SETLEASE as u64],
            },
            why: "a lease on a file the tool owns makes every other process's open of it block or fail (.git/config, as the supervisor scans it)",
        },
        Entry {
            name: "socketpair",
            nr: SYS_socketpair,
            when: When::AnyArgNotIn(PAIR_ARGS),
            why: "only connected AF_UNIX pairs: a datagram end can send to any socket it names, the host's included",
        },
    ];
    if network {
        t.push(Entry {
            name: "socket",
            nr: SYS_socket,
            when: When::ArgNotIn { arg: 0, values: NETWORK_DOMAINS },
            why: "only TCP/UDP over IPv4/IPv6: no AF_UNIX (the daemon's socket), netlink, packet, vsock or alg",
        });
    } else {
        t.push(Entry {
            name: "socket",
            nr: SYS_socket,
            when: When::Always,
            why: "no network and no AF_UNIX (Landlock before ABI 9 does not cover connect() to path sockets)",
        });
        t.push(always!(
            SYS_bind,
            "without socket() only socketpair ends exist, and a bound end takes a name in the host's abstract namespace from its owner"
        ));
    }
    t
}

/// Why the filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// seccompiler refused the table.
    #[error("building the seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    /// The kernel refused the filter.
    #[error("installing the seccomp filter: {0}")]
    Install(#[from] seccompiler::Error),
    /// A forked worker found no filter inherited from its zygote.
    #[error("the zygote's seccomp filters are not in place; refusing to install only the rest")]
    Missing,
}

fn cond(
    arg: u8,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

/// Argument `arg` (low 32 bits) has `bit` set.
fn has_bit(arg: u8, bit: u64) -> Result<SeccompCondition, seccompiler::BackendError> {
    cond(arg, SeccompCmpOp::MaskedEq(bit), bit)
}

/// The syscalls whose entries a zygote cannot install ahead for the workers it forks, so each
/// worker installs them itself (the late part of the table): what the worker's own lockdown
/// calls after the fork — the mount family, and `unshare` and `clone` with namespace flags
/// where the kernel refused the zygote's clone — and `socket` and `bind`, whose entries follow
/// the call's network setting. The zygote itself clones with namespace flags, so `clone` is late
/// too.
pub const LATE: &[i64] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_clone,
    libc::SYS_socket,
    libc::SYS_bind,
];

/// Which entries of the table a filter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// All of them: a worker that was executed, not forked by a zygote.
    All,
    /// All but [`LATE`]: installed once by the zygote, inherited by every worker it forks.
    Early,
    /// Only [`LATE`]: installed by each forked worker at the end of its lockdown.
    Late,
}

impl Part {
    fn holds(self, nr: i64) -> bool {
        match self {
            Part::All => true,
            Part::Early => !LATE.contains(&nr),
            Part::Late => LATE.contains(&nr),
        }
    }
}

/// Compiles the table into the EPERM filter. Pure: nothing is installed.
pub fn table_filter(network: bool) -> Result<BpfProgram, SeccompError> {
    part_filter(network, Part::All)
}

/// Compiles `part` of the table. Pure: nothing is installed.
pub fn part_filter(network: bool, part: Part) -> Result<BpfProgram, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for entry in table(network).into_iter().filter(|e| part.holds(e.nr)) {
        let list = rules.entry(entry.nr).or_default();
        match entry.when {
            When::Always => {}
            When::ArgIn { arg, values } => {
                for &v in values {
                    list.push(SeccompRule::new(vec![cond(arg, SeccompCmpOp::Eq, v)?])?);
                }
            }
            When::ArgNotIn { arg, values } => {
                let conds = values
                    .iter()
                    .map(|&v| cond(arg, SeccompCmpOp::Ne, v))
                    .collect::<Result<Vec<_>, _>>()?;
                list.push(SeccompRule::new(conds)?);
            }
            When::AnyArgNotIn(args) => {
                for &(arg, values) in args {
                    let conds = values
                        .iter()
                        .map(|&v| cond(arg, SeccompCmpOp::Ne, v))
                        .collect::<Result<Vec<_>, _>>()?;
                    list.push(SeccompRule::new(conds)?);
                }
            }
            When::AnyBit { arg, bits } => {
                for &b in bits {
                    list.push(SeccompRule::new(vec![has_bit(arg, b)?])?);
                }
            }
            When::SetIdMode { mode, create } => {
                for &bit in SET_ID_BITS {
                    match create {
                        None => list.push(SeccompRule::new(vec![has_bit(mode, bit)?])?),
                        Some(flags) => {
                            for &flag in CREATE_FLAGS {
                                list.push(SeccompRule::new(vec![
                                    has_bit(flags, flag)?,
                                    has_bit(mode, bit)?,
                                ])?);
                            }
                        }
                    }
                }
            }
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        TargetArch::x86_64,
    )?;
    Ok(filter.try_into()?)
}

const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// Offsets into `struct seccomp_data`.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The prologue filter. Pure: nothing is installed.
pub fn prologue_filter() -> BpfProgram {
    vec![
        insn(BPF_LD_W_ABS, 0, 0, OFFSET_ARCH),
        insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        insn(BPF_LD_W_ABS, 0, 0, OFFSET_NR),
        insn(BPF_JSET_K, 0, 1, X32_SYSCALL_BIT),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
        insn(BPF_JEQ_K, 1, 0, libc::SYS_clone3 as u32),
        insn(BPF_JEQ_K, 0, 1, libc::SYS_openat2 as u32),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        insn(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Installs both filters, the whole table, on the calling thread (and what it will exec). Needs
/// `no_new_privs`. For a worker that was executed, not forked by a zygote.
pub fn install(network: bool) -> Result<(), SeccompError> {
    seccompiler::apply_filter(&prologue_filter())?;
    seccompiler::apply_filter(&table_filter(network)?)?;
    Ok(())
}

/// The zygote's part, once: the prologue and the [`Part::Early`] table, which every worker it
/// forks inherits (the kernel shares a filter with children, it does not convert it again: that
/// conversion was a tenth of a pooled call's CPU). Sets `no_new_privs` first, which an
/// unprivileged process needs to install a filter, and which its workers set anyway.
pub fn install_early(early: &BpfProgram) -> Result<(), SeccompError> {
    nix::sys::prctl::set_no_new_privs()
        .map_err(|e| SeccompError::Install(seccompiler::Error::Seccomp(std::io::Error::from(e))))?;
    seccompiler::apply_filter(&prologue_filter())?;
    seccompiler::apply_filter(early)?;
    Ok(())
}

/// A forked worker's part: the [`Part::Late`] table, after checking that the zygote's filters
/// are in place (refused otherwise: a worker never runs with half a table).
pub fn install_late(late: &BpfProgram) -> Result<(), SeccompError> {
    // SAFETY: PR_GET_SECCOMP takes no pointer and returns the calling thread's seccomp mode.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if mode != libc::SECCOMP_MODE_FILTER as i32 {
        return Err(SeccompError::Missing);
    }
    apply(late)
}

/// Installs one compiled filter on the calling thread, nothing checked. Needs `no_new_privs`.
pub fn apply(program: &BpfProgram) -> Result<(), SeccompError> {
    seccompiler::apply_filter(program)?;
    Ok(())
}

#[cfg(test)]
mod tests;
