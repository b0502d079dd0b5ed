//! Tests of the table and of both compiled filters. Nothing is installed: a small classic-BPF
//! interpreter runs the programs the way the kernel does (every filter, the strictest answer
//! wins), so each rule is checked for what it answers to a call, not for how it is written.
#![allow(clippy::unwrap_used, clippy::panic)] // tests: a panic is the failure report

use super::*;

const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const RET_EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const RET_ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
const RET_KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

const BPF_ALU_AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const BPF_JA: u16 = 0x05; // BPF_JMP | BPF_JA
const BPF_JGT_K: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
const BPF_JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K

/// A `struct seccomp_data` for one call on `arch`.
fn seccomp_data(arch: u32, nr: i64, args: [u64; 6]) -> [u8; 64] {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&(nr as u32).to_ne_bytes());
    data[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    data
}

/// Runs one classic-BPF program over `data`, with the opcodes seccompiler and the prologue use.
fn run(program: &[sock_filter], data: &[u8; 64]) -> u32 {
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let insn = &program[pc];
        pc += 1;
        let jump = |taken: bool| usize::from(if taken { insn.jt } else { insn.jf });
        match insn.code {
            BPF_LD_W_ABS => {
                let at = insn.k as usize;
                acc = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
            }
            BPF_ALU_AND_K => acc &= insn.k,
            BPF_JA => pc += insn.k as usize,
            BPF_JEQ_K => pc += jump(acc == insn.k),
            BPF_JGT_K => pc += jump(acc > insn.k),
            BPF_JGE_K => pc += jump(acc >= insn.k),
            BPF_JSET_K => pc += jump(acc & insn.k != 0),
            BPF_RET_K => return insn.k,
            other => panic!("opcode {other:#x} at {} is not interpreted", pc - 1),
        }
    }
}

/// What the kernel answers with both filters installed: the action of highest precedence
/// (the lowest as a signed number); on a tie, the most recently installed filter's.
fn answer_on(arch: u32, network: bool, nr: i64, args: [u64; 6]) -> u32 {
    let data = seccomp_data(arch, nr, args);
    let newest_first = [table_filter(network).unwrap(), prologue_filter()];
    let mut answer = RET_ALLOW;
    for program in &newest_first {
        let this = run(program, &data);
        let action = |r: u32| (r & libc::SECCOMP_RET_ACTION_FULL) as i32;
        if action(this) < action(answer) {
            answer = this;
        }
    }
    answer
}

fn answer(nr: i64, args: &[u64]) -> u32 {
    let mut all = [0u64; 6];
    all[..args.len()].copy_from_slice(args);
    answer_on(AUDIT_ARCH_X86_64, false, nr, all)
}

fn entry(t: &[Entry], name: &str) -> Entry {
    *t.iter()
        .find(|e| e.name == name || e.name == format!("SYS_{name}"))
        .unwrap()
}

#[test]
fn every_entry_has_a_reason_and_numbers_are_unique() {
    let t = table(false);
    let mut seen = std::collections::BTreeSet::new();
    for e in &t {
        assert!(!e.why.is_empty(), "{} has no reason", e.name);
        assert!(seen.insert(e.nr), "{} appears twice", e.name);
    }
}

#[test]
fn the_table_holds_what_the_threat_model_needs() {
    let t = table(false);
    for name in [
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "io_uring_setup",
        "bpf",
        "perf_event_open",
        "kexec_load",
        "init_module",
        "finit_module",
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "fsopen",
        "move_mount",
        "open_tree",
        "unshare",
        "setns",
        "keyctl",
        "add_key",
        "request_key",
        "userfaultfd",
        "acct",
        "swapon",
        "reboot",
        "clock_settime",
        "settimeofday",
        "quotactl",
        "open_by_handle_at",
        "modify_ldt",
        "fanotify_init",
        "memfd_secret",
        "pidfd_getfd",
    ] {
        assert_eq!(entry(&t, name).when, When::Always, "{name}");
    }
    for name in [
        "chmod",
        "fchmod",
        "fchmodat",
        "fchmodat2",
        "open",
        "openat",
        "creat",
        "mknod",
        "mknodat",
    ] {
        assert!(
            matches!(entry(&t, name).when, When::SetIdMode { .. }),
            "{name}"
        );
    }
    assert_eq!(
        entry(&t, "socket").when,
        When::Always,
        "no sockets without network"
    );
    assert!(
        matches!(entry(&table(true), "socket").when, When::ArgNotIn { values, .. } if values == NETWORK_DOMAINS)
    );
    assert_eq!(entry(&t, "socketpair").when, When::AnyArgNotIn(PAIR_ARGS));
    assert!(
        matches!(entry(&t, "fcntl").when, When::ArgIn { arg: 1, values } if values == [libc::F_SETLEASE as u64])
    );
    assert_eq!(
        entry(&t, "bind").when,
        When::Always,
        "no bind without network"
    );
    assert!(
        !table(true).iter().any(|e| e.nr == libc::SYS_bind),
        "a server binds its port when network is granted"
    );
}

#[test]
fn fcntl_is_refused_only_for_f_setlease() {
    use libc::*;
    for network in [false, true] {
        let fcntl = |cmd: i32, arg: u64| {
            answer_on(
                AUDIT_ARCH_X86_64,
                network,
                SYS_fcntl,
                [3, cmd as u64, arg, 0, 0, 0],
            )
        };
        for lease in [F_WRLCK, F_RDLCK, F_UNLCK] {
            assert_eq!(fcntl(F_SETLEASE, lease as u64), RET_EPERM, "{lease}");
        }
        // The command is an unsigned int: bits above the low 32 do not hide it.
        assert_eq!(
            answer_on(
                AUDIT_ARCH_X86_64,
                network,
                SYS_fcntl,
                [3, 1 << 32 | F_SETLEASE as u64, F_WRLCK as u64, 0, 0, 0]
            ),
            RET_EPERM
        );
        for cmd in [
            F_GETLEASE,
            F_GETFL,
            F_SETFL,
            F_GETFD,
            F_SETFD,
            F_DUPFD_CLOEXEC,
            F_SETLK,
            F_SETLKW,
            F_OFD_SETLK,
            F_NOTIFY,
            F_SETPIPE_SZ,
            F_ADD_SEALS,
        ] {
            assert_eq!(fcntl(cmd, F_WRLCK as u64), RET_ALLOW, "fcntl cmd {cmd}");
        }
    }
}

#[test]
fn socketpair_makes_connected_unix_pairs_only() {
    use libc::*;
    for network in [false, true] {
        let pair = |domain: i32, ty: i32| {
            answer_on(
                AUDIT_ARCH_X86_64,
                network,
                SYS_socketpair,
                [domain as u64, ty as u64, 0, 0, 0, 0],
            )
        };
        for ty in [SOCK_STREAM, SOCK_SEQPACKET] {
            for flags in [0, SOCK_NONBLOCK, SOCK_CLOEXEC, SOCK_NONBLOCK | SOCK_CLOEXEC] {
                assert_eq!(pair(AF_UNIX, ty | flags), RET_ALLOW, "{ty} {flags:#x}");
                // Only AF_UNIX has pairs; another domain fails after making a socket.
                for domain in [AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_TIPC, AF_VSOCK] {
                    assert_eq!(pair(domain, ty | flags), RET_EPERM, "{domain} {ty}");
                }
            }
        }
        // SOCK_RAW is a datagram socket in AF_UNIX; SOCK_RDM and the rest are refused too.
        for ty in [SOCK_DGRAM, SOCK_RAW, SOCK_RDM, 10, 0, 15] {
            for flags in [0, SOCK_NONBLOCK, SOCK_CLOEXEC, SOCK_NONBLOCK | SOCK_CLOEXEC] {
                assert_eq!(pair(AF_UNIX, ty | flags), RET_EPERM, "{ty} {flags:#x}");
            }
        }
        // A stray flag the kernel would refuse (EINVAL) is refused here first.
        assert_eq!(pair(AF_UNIX, SOCK_STREAM | 0x100), RET_EPERM);
    }
}

#[test]
fn bind_is_refused_without_network_only() {
    let bind = |network| {
        answer_on(
            AUDIT_ARCH_X86_64,
            network,
            libc::SYS_bind,
            [3, 0, 16, 0, 0, 0],
        )
    };
    assert_eq!(bind(false), RET_EPERM);
    assert_eq!(bind(true), RET_ALLOW);
    for nr in [
        libc::SYS_listen,
        libc::SYS_connect,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
    ] {
        assert_eq!(
            answer_on(AUDIT_ARCH_X86_64, false, nr, [3, 0, 16, 0, 0, 0]),
            RET_ALLOW
        );
    }
}

#[test]
fn both_filters_compile_to_a_size_the_kernel_takes() {
    for network in [false, true] {
        let program = table_filter(network).unwrap();
        assert!(
            program.len() > 50 && program.len() < 4096,
            "{} instructions",
            program.len()
        );
    }
}

#[test]
fn every_always_entry_is_refused_with_eperm_and_an_unlisted_call_is_allowed() {
    for network in [false, true] {
        for e in table(network).iter().filter(|e| e.when == When::Always) {
            let got = answer_on(AUDIT_ARCH_X86_64, network, e.nr, [0; 6]);
            assert_eq!(got, RET_EPERM, "{}", e.name);
        }
        for nr in [libc::SYS_getpid, libc::SYS_read, libc::SYS_mkdir] {
            assert_eq!(answer_on(AUDIT_ARCH_X86_64, network, nr, [0; 6]), RET_ALLOW);
        }
    }
}

#[test]
fn every_set_id_entry_refuses_either_bit_and_allows_a_plain_mode() {
    let creating = [
        libc::O_WRONLY | libc::O_CREAT,
        libc::O_WRONLY | libc::O_TMPFILE,
    ];
    for e in table(false) {
        let When::SetIdMode { mode, create } = e.when else {
            continue;
        };
        let flag_sets: Vec<Option<i32>> = match create {
            None => vec![None],
            Some(_) => creating.iter().copied().map(Some).collect(),
        };
        for flags in flag_sets {
            for (bits, expected) in [
                (0o4755, RET_EPERM),
                (0o2755, RET_EPERM),
                (0o6000, RET_EPERM),
                (0o7777, RET_EPERM),
                (0o755, RET_ALLOW),
                (0o1777, RET_ALLOW),
            ] {
                let mut args = [0u64; 6];
                args[usize::from(mode)] = bits;
                if let (Some(at), Some(f)) = (create, flags) {
                    args[usize::from(at)] = f as u64;
                }
                let got = answer_on(AUDIT_ARCH_X86_64, false, e.nr, args);
                assert_eq!(got, expected, "{} mode {bits:o} flags {flags:?}", e.name);
            }
        }
    }
}

#[test]
fn set_id_rules_read_the_right_argument() {
    use libc::*;
    // The mode in another argument's place (chmod's path, fchmodat's path) does not count.
    assert_eq!(answer(SYS_chmod, &[0o4755, 0o755]), RET_ALLOW);
    assert_eq!(answer(SYS_fchmodat, &[0, 0o4755, 0o755]), RET_ALLOW);
    assert_eq!(answer(SYS_fchmodat2, &[0, 0, 0o2755, 0]), RET_EPERM);
    assert_eq!(
        answer(SYS_mknod, &[0, (S_IFIFO | 0o6644) as u64]),
        RET_EPERM
    );
    assert_eq!(answer(SYS_mknod, &[0, (S_IFIFO | 0o644) as u64]), RET_ALLOW);
    assert_eq!(
        answer(SYS_mknodat, &[0, 0, (S_IFREG | 0o4755) as u64]),
        RET_EPERM
    );
    // Only the low 32 bits are the mode (umode_t): bits above them neither refuse nor hide.
    assert_eq!(answer(SYS_chmod, &[0, 1 << 32 | 0o755]), RET_ALLOW);
    assert_eq!(answer(SYS_chmod, &[0, 1 << 32 | 0o4755]), RET_EPERM);
}

#[test]
fn open_is_refused_only_when_it_creates_a_file_with_the_bits() {
    use libc::*;
    let (creat, tmpfile) = ((O_WRONLY | O_CREAT) as u64, (O_RDWR | O_TMPFILE) as u64);
    // The mode is ignored unless the call creates a file: opening with a stray mode is fine.
    assert_eq!(answer(SYS_open, &[0, O_RDONLY as u64, 0o4755]), RET_ALLOW);
    assert_eq!(
        answer(SYS_open, &[0, O_DIRECTORY as u64, 0o4755]),
        RET_ALLOW
    );
    assert_eq!(answer(SYS_open, &[0, creat, 0o644]), RET_ALLOW);
    assert_eq!(answer(SYS_open, &[0, creat, 0o4755]), RET_EPERM);
    assert_eq!(answer(SYS_open, &[0, tmpfile, 0o2755]), RET_EPERM);
    // openat: flags in the third argument, mode in the fourth.
    assert_eq!(answer(SYS_openat, &[0, 0, creat, 0o6755]), RET_EPERM);
    assert_eq!(answer(SYS_openat, &[0, 0, tmpfile, 0o4700]), RET_EPERM);
    assert_eq!(answer(SYS_openat, &[0, 0, creat, 0o755]), RET_ALLOW);
    assert_eq!(answer(SYS_openat, &[0, creat, 0, 0o4755]), RET_ALLOW);
    assert_eq!(answer(SYS_creat, &[0, 0o4755]), RET_EPERM);
    assert_eq!(answer(SYS_creat, &[0, 0o644]), RET_ALLOW);
}

#[test]
fn mkdir_is_left_to_the_kernel() {
    // The kernel drops S_ISUID/S_ISGID from mkdir's mode (the escape suite checks it).
    assert_eq!(answer(libc::SYS_mkdir, &[0, 0o6755]), RET_ALLOW);
    assert_eq!(answer(libc::SYS_mkdirat, &[0, 0, 0o6755]), RET_ALLOW);
}

#[test]
fn the_prologue_kills_foreign_arches_refuses_x32_and_sends_two_calls_to_their_fallback() {
    const AUDIT_ARCH_I386: u32 = 3 | 0x4000_0000;
    assert_eq!(answer_on(AUDIT_ARCH_I386, true, 20, [0; 6]), RET_KILL);
    assert_eq!(
        answer(libc::SYS_getpid | i64::from(X32_SYSCALL_BIT), &[]),
        RET_EPERM
    );
    for args in [[0u64; 4], [0, 0, 0, 0o4755]] {
        assert_eq!(answer(libc::SYS_openat2, &args), RET_ENOSYS, "openat2");
    }
    assert_eq!(answer(libc::SYS_clone3, &[]), RET_ENOSYS, "clone3");
    assert_eq!(answer(libc::SYS_getpid, &[]), RET_ALLOW);
}

#[test]
fn argument_rules_of_the_first_round_still_hold() {
    use libc::*;
    assert_eq!(
        answer(SYS_clone, &[(CLONE_NEWUSER | SIGCHLD) as u64]),
        RET_EPERM
    );
    assert_eq!(answer(SYS_clone, &[SIGCHLD as u64]), RET_ALLOW);
    assert_eq!(answer(SYS_ioctl, &[0, TIOCSTI]), RET_EPERM);
    assert_eq!(answer(SYS_ioctl, &[0, TCGETS]), RET_ALLOW);
    assert_eq!(answer(SYS_personality, &[0xffff_ffff]), RET_ALLOW);
    assert_eq!(answer(SYS_personality, &[0x0040_0000]), RET_EPERM);
    let socket = |network, domain: i32| {
        answer_on(
            AUDIT_ARCH_X86_64,
            network,
            SYS_socket,
            [domain as u64, 0, 0, 0, 0, 0],
        )
    };
    assert_eq!(socket(false, AF_INET), RET_EPERM);
    assert_eq!(socket(true, AF_INET), RET_ALLOW);
    assert_eq!(socket(true, AF_UNIX), RET_EPERM);
}
