use super::machine::{AgentPath, canonical};
use super::*;

fn sensitive(root: &Path) -> Sensitive {
    Sensitive {
        system: ["/tmp", "/var", "/usr", "/etc", "/etc/agentd"]
            .map(PathBuf::from)
            .to_vec(),
        homes: vec![root.join("home/ana"), root.join("home/bob")],
        agent: vec![
            AgentPath {
                path: root.join("cfg/agentd"),
                what: "the agent's config",
                is_dir: true,
            },
            AgentPath {
                path: root.join("keys/env"),
                what: "the agent's API keys",
                is_dir: false,
            },
        ],
    }
}

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentd-wscheck-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

#[test]
fn broad_workspaces_are_judged_with_the_reason_and_projects_pass() {
    let r = Path::new("/x");
    let s = sensitive(r);
    let cases: &[(&str, Option<Reason>)] = &[
        ("/", Some(Reason::Root)),
        (
            "/tmp",
            Some(Reason::System {
                dir: "/tmp".into(),
                holds: false,
            }),
        ),
        (
            "/etc",
            Some(Reason::System {
                dir: "/etc".into(),
                holds: false,
            }),
        ),
        (
            "/x/home/ana",
            Some(Reason::Home {
                home: "/x/home/ana".into(),
                holds: false,
            }),
        ),
        (
            "/x/home",
            Some(Reason::Home {
                home: "/x/home/ana".into(),
                holds: true,
            }),
        ),
        (
            "/x",
            Some(Reason::Home {
                home: "/x/home/ana".into(),
                holds: true,
            }),
        ),
        (
            "/x/cfg",
            Some(Reason::Agent {
                what: "the agent's config",
                path: "/x/cfg/agentd".into(),
                inside: false,
            }),
        ),
        (
            "/x/cfg/agentd/sub",
            Some(Reason::Agent {
                what: "the agent's config",
                path: "/x/cfg/agentd".into(),
                inside: true,
            }),
        ),
        (
            "/x/keys",
            Some(Reason::Agent {
                what: "the agent's API keys",
                path: "/x/keys/env".into(),
                inside: false,
            }),
        ),
        ("/x/home/ana/project", None),
        ("/x/home/anabel", None),
        ("/tmp/project", None),
        ("/x/cfg2", None),
    ];
    for (ws, want) in cases {
        assert_eq!(&judge(Path::new(ws), &s), want, "{ws}");
    }
}

#[test]
fn a_refusal_names_the_workspace_what_it_holds_and_the_override() {
    let s = sensitive(Path::new("/x"));
    let flag = Guard::default();
    let err = check_against(Path::new("/x/home"), &flag, &s).unwrap_err();
    let text = err.to_string();
    for part in [
        "workspace /x/home ",
        "/x/home/ana",
        "--allow-broad-workspace",
        "allow_broad_workspace = true",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let daemon = Guard {
        how: Override::DaemonConfig,
        ..Guard::default()
    };
    let text = check_against(Path::new("/x/home"), &daemon, &s)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("daemon's operator") && !text.contains("--allow"),
        "{text}"
    );
    assert_eq!(
        check_against(Path::new("/x/home/ana/p"), &flag, &s).unwrap(),
        Hidden::default()
    );
}

#[test]
fn symlinks_and_dot_dots_are_compared_where_they_lead() {
    let root = scratch("links");
    let home = root.join("home/ana");
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(&home, root.join("link")).unwrap();
    let s = Sensitive {
        homes: vec![home.clone()],
        ..Sensitive::default()
    };
    for ws in [
        root.join("link"),
        root.join("home/../home/ana"),
        root.join("home/ana/."),
    ] {
        let err = check_against(&ws, &Guard::default(), &s).unwrap_err();
        assert_eq!(err.workspace, home, "{}", ws.display());
        assert_eq!(
            err.reason,
            Reason::Home {
                home: home.clone(),
                holds: false
            }
        );
    }
    // A path not made yet compares where it will be: under its parent's real path.
    assert_eq!(
        canonical(&root.join("link/.config/agentd")),
        home.join(".config/agentd")
    );
    assert_eq!(canonical(&root.join("link/new/../cfg")), home.join("cfg"));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_allowed_home_hides_its_secrets_and_a_home_inside_whole() {
    let root = scratch("allowed");
    let ana = root.join("home/ana");
    let bob = root.join("home/bob");
    std::fs::create_dir_all(ana.join(".ssh")).unwrap();
    std::fs::create_dir_all(&bob).unwrap();
    std::fs::write(ana.join(".bashrc"), "").unwrap();
    let s = Sensitive {
        homes: vec![ana.clone(), bob.clone(), root.join("home/gone")],
        ..Sensitive::default()
    };
    let allow = Guard {
        allow: true,
        ..Guard::default()
    };
    let at_home = check_against(&ana, &allow, &s).unwrap();
    assert!(at_home.paths.contains(&ana.join(".ssh")), "{at_home:?}");
    assert!(at_home.paths.contains(&ana.join(".bashrc")), "{at_home:?}");
    assert!(
        !at_home.paths.contains(&ana.join(".gnupg")),
        "missing: not a path to cover"
    );
    assert!(
        at_home.names.contains(&".gnupg".to_owned()),
        "missing: not to be made either"
    );
    assert!(at_home.names.contains(&".profile".to_owned()));
    let above = check_against(&root.join("home"), &allow, &s).unwrap();
    assert_eq!(above.paths, vec![ana.clone(), bob.clone()]);
    assert_eq!(above.names, vec!["gone".to_owned()]);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn the_homes_links_are_read_with_the_owners_rights_not_roots() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("owner-links");
    let (home, ws) = (dir.join("home"), dir.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::symlink(ws.join("rc"), home.join(".rc")).unwrap();
    // A home only root may list: what root would see there, the owner does not.
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let protects_rc = |run_as: Option<protocol::worker::RunAs>| {
        let (home, ws) = (home.clone(), ws.clone());
        // On a thread of its own: the scan changes its thread's filesystem identity.
        std::thread::spawn(move || {
            let mut spec = crate::worker::default_sandbox(ws, "/nonexistent".into(), Some(&home));
            spec.run_as = run_as;
            links_protected(&mut spec, Some(&home), &Guard::default()).unwrap();
            spec.protected_paths.iter().any(|p| p == "rc")
        })
        .join()
        .unwrap()
    };
    assert!(protects_rc(None), "as root, the link is seen");
    let nobody = protocol::worker::RunAs {
        uid: 65534,
        gid: 65534,
        groups: vec![],
    };
    assert!(!protects_rc(Some(nobody)), "as the owner, it is not");
    std::fs::remove_dir_all(&dir).unwrap();
}
