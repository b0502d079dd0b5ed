use super::*;
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

static DIR: OnceLock<PathBuf> = OnceLock::new();

fn dir() -> &'static Path {
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agentd-warm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fn source() -> Vec<(PathBuf, Grant)> {
    vec![
        (dir().join("hosts"), Grant::Read),
        (dir().join("pki/tls/certs"), Grant::Read),
        (dir().join("null"), Grant::Device),
    ]
}

/// The inode each prepared descriptor is for.
fn inodes(preparer: &Preparer) -> Vec<u64> {
    preparer
        .warm
        .fixed
        .iter()
        .flatten()
        .map(|f| nix::sys::stat::fstat(&f.opened.fd).unwrap().st_ino)
        .collect()
}

fn ino(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

#[test]
fn a_fixed_path_replaced_or_made_later_is_opened_again_before_the_next_fork() {
    let hosts = dir().join("hosts");
    std::fs::write(&hosts, "one").unwrap();
    let mut preparer = Preparer::watching(source);
    assert_eq!(
        inodes(&preparer),
        [ino(&hosts)],
        "what does not exist is left out"
    );
    let kept = preparer.keep();
    assert_eq!(kept.len(), 1);

    preparer.refresh();
    assert_eq!(
        preparer.keep(),
        kept,
        "nothing changed: the same descriptors"
    );

    // Replaced by a rename, as resolv.conf and ld.so.cache are: the old descriptor would grant
    // the old inode only.
    let new = dir().join("hosts.new");
    std::fs::write(&new, "two").unwrap();
    let old_ino = ino(&hosts);
    std::fs::rename(&new, &hosts).unwrap();
    assert_ne!(ino(&hosts), old_ino);
    preparer.refresh();
    assert_eq!(inodes(&preparer), [ino(&hosts)]);

    // Made a step at a time under directories that did not exist when it was first prepared.
    std::fs::create_dir(dir().join("pki")).unwrap();
    preparer.refresh();
    std::fs::create_dir(dir().join("pki/tls")).unwrap();
    preparer.refresh();
    let certs = dir().join("pki/tls/certs");
    std::fs::create_dir(&certs).unwrap();
    preparer.refresh();
    assert_eq!(inodes(&preparer), [ino(&hosts), ino(&certs)]);
    let directories: Vec<bool> = preparer
        .warm
        .fixed
        .iter()
        .flatten()
        .map(|f| f.opened.is_dir)
        .collect();
    assert_eq!(directories, [false, true]);
    let _ = std::fs::remove_dir_all(dir());
}

#[test]
fn the_early_and_late_parts_split_the_table_and_only_the_late_part_follows_the_network() {
    use seccomp::{LATE, Part, table};
    for network in [false, true] {
        let all: Vec<i64> = table(network).iter().map(|e| e.nr).collect();
        let early: Vec<i64> = all.iter().copied().filter(|n| !LATE.contains(n)).collect();
        let late: Vec<i64> = all.iter().copied().filter(|n| LATE.contains(n)).collect();
        assert_eq!(early.len() + late.len(), all.len());
        assert!(late.contains(&libc::SYS_socket) && late.contains(&libc::SYS_clone));
        assert!(early.contains(&libc::SYS_ptrace) && early.contains(&libc::SYS_fchmodat));
    }
    // Compiled once by the zygote for every network setting: it must not depend on it.
    let words = |p: &BpfProgram| -> Vec<(u16, u8, u8, u32)> {
        p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
    };
    let early = |network| words(&seccomp::part_filter(network, Part::Early).unwrap());
    assert_eq!(early(false), early(true));
    let late = |network| words(&seccomp::part_filter(network, Part::Late).unwrap());
    assert_ne!(late(false), late(true));
    let tables = Tables::compile().unwrap();
    assert_eq!(words(tables.late(true)), late(true));
    assert_eq!(words(&tables.early), early(false));
}

static LINKED: OnceLock<PathBuf> = OnceLock::new();

/// A directory of its own (the tests run in parallel): `etc/resolv.conf`, a symlink into `run/`.
fn linked_dir() -> &'static Path {
    LINKED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agentd-warm-linked-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        std::fs::create_dir_all(dir.join("run/resolve")).unwrap();
        dir
    })
}

fn linked_source() -> Vec<(PathBuf, Grant)> {
    vec![(linked_dir().join("etc/resolv.conf"), Grant::Read)]
}

#[test]
fn the_target_of_a_symlinked_fixed_path_replaced_by_a_rename_is_opened_again() {
    // As systemd-resolved has it: /etc/resolv.conf -> ../run/systemd/resolve/stub-resolv.conf,
    // which it replaces by a rename whenever the DNS servers change.
    let target = linked_dir().join("run/resolve/stub-resolv.conf");
    std::fs::write(&target, "nameserver 127.0.0.53\n").unwrap();
    std::os::unix::fs::symlink(
        "../run/resolve/stub-resolv.conf",
        linked_dir().join("etc/resolv.conf"),
    )
    .unwrap();
    let mut preparer = Preparer::watching(linked_source);
    assert_eq!(inodes(&preparer), [ino(&target)]);

    let new = linked_dir().join("run/resolve/.stub-resolv.conf.tmp");
    std::fs::write(&new, "nameserver 10.0.0.1\n").unwrap();
    std::fs::rename(&new, &target).unwrap();
    preparer.refresh();
    assert_eq!(
        inodes(&preparer),
        [ino(&target)],
        "the call would be refused the current resolv.conf"
    );
    let _ = std::fs::remove_dir_all(linked_dir());
}
