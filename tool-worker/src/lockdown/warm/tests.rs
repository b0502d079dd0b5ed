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
fn the_prepared_tables_are_the_ones_a_call_would_compile() {
    let tables = Tables::compile().unwrap();
    let words = |p: &BpfProgram| -> Vec<(u16, u8, u8, u32)> {
        p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
    };
    assert_eq!(
        words(tables.get(false)),
        words(&seccomp::table_filter(false).unwrap())
    );
    assert_eq!(
        words(tables.get(true)),
        words(&seccomp::table_filter(true).unwrap())
    );
    assert_ne!(words(tables.get(false)), words(tables.get(true)));
}
