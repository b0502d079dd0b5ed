//! Skills: `SKILL.md` files with YAML front matter (`name`, `description`) in
//! `.agents/skills/<dir>/` of the workspace and of the user's home. Only the index — one
//! `name: description` line each — goes into the system prompt; the model reads a body when it
//! needs it (progressive disclosure). The workspace's skill wins a name clash with the user's.

use super::{Skipped, read_file};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Most bytes of one `SKILL.md`.
pub const MAX_SKILL_BYTES: u64 = 64 * 1024;
/// Longest name, in characters.
const MAX_NAME: usize = 64;
/// Longest description, in characters.
const MAX_DESCRIPTION: usize = 1024;
/// Most skills read from one directory.
const MAX_SKILLS: usize = 200;

/// One skill found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name, as the model asks for it.
    pub name: String,
    /// One line: what it is for.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: PathBuf,
}

#[derive(Deserialize)]
struct Front {
    name: Option<String>,
    description: Option<String>,
}

/// The skills of the user (`home`) and the workspace, by name, the workspace's winning a clash;
/// and the files skipped.
pub fn load(home: Option<&Path>, workspace: &Path) -> (Vec<Skill>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let mut skills: Vec<Skill> = Vec::new();
    let roots = home.into_iter().chain([workspace]);
    for root in roots {
        for skill in in_dir(&root.join(".agents/skills"), &mut skipped) {
            // Later roots win: the workspace after the user.
            skills.retain(|s| s.name != skill.name);
            skills.push(skill);
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, skipped)
}

/// The index for the system prompt: `- name: description`, one per line.
pub fn index(skills: &[Skill]) -> String {
    skills
        .iter()
        .map(|s| format!("- {}: {}\n", s.name, s.description))
        .collect()
}

impl Skill {
    /// The instructions under the front matter, read again now (the file may have changed).
    pub fn body(&self) -> Result<String, Skipped> {
        let read = read_file(&self.path, MAX_SKILL_BYTES)?.ok_or_else(|| Skipped {
            path: self.path.clone(),
            why: "it no longer exists".into(),
        })?;
        let body = split_front(&read.text).map_or(read.text.as_str(), |(_, body)| body);
        Ok(body.trim_start_matches('\n').to_owned())
    }
}

fn in_dir(dir: &Path, skipped: &mut Vec<Skipped>) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        // A skill directory is a directory, not a symlink to one somewhere else.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .take(MAX_SKILLS)
        .filter_map(|d| {
            let path = d.join("SKILL.md");
            match read_file(&path, MAX_SKILL_BYTES) {
                Ok(Some(read)) => parse(&path, &read.text).map_err(|s| skipped.push(s)).ok(),
                Ok(None) => None,
                Err(s) => {
                    skipped.push(s);
                    None
                }
            }
        })
        .collect()
}

/// The front matter (between a first line `---` and the next `---`) and the rest.
fn split_front(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

fn parse(path: &Path, text: &str) -> Result<Skill, Skipped> {
    let bad = |why: String| Skipped {
        path: path.to_path_buf(),
        why,
    };
    let (front, _) = split_front(text).ok_or_else(|| {
        bad(
            "no front matter (a first line `---`, then `name:` and `description:`, then `---`)"
                .into(),
        )
    })?;
    let front: Front = serde_saphyr::from_str(front)
        .map_err(|e| bad(format!("its front matter is not valid YAML: {e}")))?;
    let name = front
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bad("its front matter has no `name`".into()))?;
    if name.chars().count() > MAX_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(bad(format!(
            "name {name:?}: at most {MAX_NAME} letters, digits, `-`, `_` or `.`"
        )));
    }
    let description = front
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or_else(|| bad("its front matter has no `description`".into()))?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(bad(format!(
            "its description is longer than {MAX_DESCRIPTION} characters"
        )));
    }
    Ok(Skill {
        name,
        description,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tmp(PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn root(label: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("agentd-skills-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        Tmp(d)
    }

    fn skill(root: &Path, dir: &str, text: &str) {
        let d = root.join(".agents/skills").join(dir);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("SKILL.md"), text).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_workspace_wins_a_clash_and_only_the_index_is_listed() {
        let (home, ws) = (root("home"), root("ws"));
        skill(
            &home.0,
            "release",
            "---\nname: release\ndescription: cut a release (user's)\n---\nUSER BODY\n",
        );
        skill(
            &home.0,
            "review",
            "---\nname: review\ndescription: >\n  review a diff\n  carefully\nlicense: MIT\n---\n\nReview steps.\n",
        );
        skill(
            &ws.0,
            "rel",
            "---\nname: release\ndescription: cut a release (project's)\n---\nPROJECT BODY\n",
        );
        let (skills, skipped) = load(Some(&home.0), &ws.0);
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(
            index(&skills),
            "- release: cut a release (project's)\n- review: review a diff carefully\n"
        );
        assert_eq!(skills[0].body().unwrap_or_default(), "PROJECT BODY\n");
        assert_eq!(skills[1].body().unwrap_or_default(), "Review steps.\n");
    }

    #[test]
    fn a_bad_file_is_skipped_with_a_warning_naming_it() {
        let ws = root("bad");
        skill(&ws.0, "a-no-front", "just text\n");
        skill(
            &ws.0,
            "b-bad-yaml",
            "---\nname: [unclosed\ndescription: x\n---\n",
        );
        skill(&ws.0, "c-no-name", "---\ndescription: x\n---\n");
        skill(
            &ws.0,
            "d-bad-name",
            "---\nname: \"rm -rf /\"\ndescription: x\n---\n",
        );
        skill(&ws.0, "e-no-description", "---\nname: e\n---\n");
        skill(
            &ws.0,
            "f-good",
            "---\nname: good\ndescription: fine\n---\nbody\n",
        );
        let secret = ws.0.join("secret");
        std::fs::write(&secret, "---\nname: leak\ndescription: TOKEN\n---\n").unwrap_or_default();
        let link = ws.0.join(".agents/skills/g-link");
        std::fs::create_dir_all(&link).unwrap_or_default();
        std::os::unix::fs::symlink(&secret, link.join("SKILL.md")).unwrap_or_default();
        std::os::unix::fs::symlink(
            ws.0.join(".agents/skills/f-good"),
            ws.0.join(".agents/skills/h-dirlink"),
        )
        .unwrap_or_default();

        let (skills, skipped) = load(None, &ws.0);
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["good"],
            "only the good one, once (a symlinked dir is not followed)"
        );
        let why: Vec<String> = skipped.iter().map(ToString::to_string).collect();
        assert_eq!(skipped.len(), 6, "{why:#?}");
        for (dir, says) in [
            ("a-no-front", "no front matter"),
            ("b-bad-yaml", "not valid YAML"),
            ("c-no-name", "no `name`"),
            ("d-bad-name", "name \"rm -rf /\""),
            ("e-no-description", "no `description`"),
            ("g-link", "symbolic link"),
        ] {
            assert!(
                why.iter().any(|w| w.contains(dir) && w.contains(says)),
                "{dir}: {says} — {why:#?}"
            );
        }
    }
}
