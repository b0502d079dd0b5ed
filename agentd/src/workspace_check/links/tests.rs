use super::*;
use std::os::unix::fs::symlink;

/// A scratch directory holding `home/` and `ws/`, canonical.
fn scratch(label: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("agentd-links-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home/.config")).unwrap();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let dir = dir.canonicalize().unwrap();
    (dir.clone(), dir.join("home"), dir.join("ws"))
}

fn scan_home(home: &Path, ws: &Path) -> Found {
    scan(home, &[home.join(".config")], &[ws.to_path_buf()])
}

#[test]
fn links_into_the_workspace_at_any_level_give_their_targets_names() {
    let (dir, home, ws) = scratch("names");
    std::fs::write(ws.join("bashrc"), "# mine\n").unwrap();
    std::fs::create_dir_all(ws.join("nvim")).unwrap();
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    symlink(ws.join("bashrc"), home.join(".bashrc")).unwrap();
    symlink(ws.join("nvim"), home.join(".config/nvim")).unwrap();
    // Relative, as GNU stow makes them; a target not made yet; three levels down.
    symlink("../ws/inputrc", home.join(".inputrc")).unwrap();
    symlink(ws.join("missing/profile"), home.join(".profile")).unwrap();
    symlink(ws.join("bin/tool"), home.join(".local/bin/tool")).unwrap();
    // Outside the workspace, or holding it from afar: nothing to protect.
    symlink("/etc/hostname", home.join(".vimrc")).unwrap();
    std::fs::create_dir_all(home.join(".wine/dosdevices")).unwrap();
    symlink("/", home.join(".wine/dosdevices/z:")).unwrap();
    symlink(&dir, home.join("projects")).unwrap();
    let found = scan_home(&home, &ws);
    assert_eq!(found.refusal, None);
    assert_eq!(
        found.names,
        ["bashrc", "bin/tool", "inputrc", "missing/profile", "nvim"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_cannot_be_protected_is_refused_naming_the_link() {
    /// The link in the home, its target in the workspace, and why it is refused.
    type Case = (&'static str, &'static str, fn(&Path) -> Why);
    let cases: &[Case] = &[
        // The workspace is the editor's config itself.
        (".config/nvim", "", |ws| Why::IsRoot(ws.to_path_buf())),
        // Through a symlink a call could retarget.
        (".zshrc", "hop/zshrc", |ws| Why::Through(ws.join("hop"))),
        // A name a pattern would read as a glob.
        (".xrc", "a*b", |ws| Why::Name(ws.join("a*b"))),
    ];
    for (i, (link, target, why)) in cases.iter().enumerate() {
        let (dir, home, ws) = scratch(&format!("refused-{i}"));
        std::fs::create_dir_all(ws.join("real")).unwrap();
        symlink(ws.join("real"), ws.join("hop")).unwrap();
        symlink(ws.join(target), home.join(link)).unwrap();
        let found = scan_home(&home, &ws);
        assert_eq!(
            found.refusal,
            Some(Refusal {
                link: home.join(link),
                why: why(&ws),
            }),
            "{link}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_config_directory_inside_or_around_the_workspace_counts_as_a_link() {
    let (dir, home, ws) = scratch("config");
    std::fs::create_dir_all(ws.join("config/nvim")).unwrap();
    // XDG_CONFIG_HOME set into the workspace: protected whole.
    let found = scan(&home, &[ws.join("config")], std::slice::from_ref(&ws));
    assert_eq!((found.names, found.refusal), (vec!["config".into()], None));
    // `~/.config` a link to a directory holding the workspace (`~/dotfiles/config`, the
    // workspace its `nvim`): the editor reads the workspace; refused, naming the link.
    std::fs::remove_dir(home.join(".config")).unwrap();
    symlink(ws.join("config"), home.join(".config")).unwrap();
    let nvim = ws.join("config/nvim");
    let found = scan_home(&home, &nvim);
    assert_eq!(
        found.refusal,
        Some(Refusal {
            link: home.join(".config"),
            why: Why::IsRoot(nvim.clone()),
        })
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_home_too_large_to_list_is_refused_and_deep_levels_are_cut() {
    let (dir, home, ws) = scratch("large");
    std::fs::create_dir_all(home.join("big")).unwrap();
    for i in 0..=MAX_ENTRIES {
        std::fs::write(home.join(format!("big/f{i}")), "").unwrap();
    }
    let found = scan_home(&home, &ws);
    assert!(found.truncated && found.refusal.is_none(), "{found:?}");
    std::fs::rename(home.join("big"), dir.join("big")).unwrap();
    std::fs::rename(dir.join("big"), home.join(".config/big")).unwrap();
    let found = scan(&home.join(".config/big"), &[], std::slice::from_ref(&ws));
    assert_eq!(found.refusal.map(|r| r.why), Some(Why::TooMany));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refusal_stops_nothing_else_and_a_directory_holding_the_workspace_is_looked_in() {
    let (dir, home, _) = scratch("past-refusal");
    // The workspace inside the home, as most are: `~/src/app`.
    let ws = home.join("src/app");
    std::fs::create_dir_all(&ws).unwrap();
    symlink(&ws, home.join(".config/nvim")).unwrap();
    symlink(ws.join("zshrc"), home.join(".zshrc")).unwrap();
    symlink(ws.join("tool"), home.join("src/tool")).unwrap();
    let found = scan_home(&home, &ws);
    assert_eq!(
        found.refusal.map(|r| r.link),
        Some(home.join(".config/nvim"))
    );
    assert_eq!(found.names, ["tool", "zshrc"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
