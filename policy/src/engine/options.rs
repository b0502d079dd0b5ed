//! Option values by the role their spec declares: a path it reads (rated by the read rules), a
//! path it writes (allowed only where the write rules allow: the workspace), a path or module it
//! loads code or configuration from (allowed only inside the workspace, where it is the
//! project's code). And the directory a build runs in: the project it builds is the code there.

use super::Policy;
use super::command::command_part;
use super::decision::{Access, ApprovalKey, Part};
use super::reads::{Cwds, How, places};
use crate::paths::{Context, is_harmless_device};
use crate::shell::excerpt_of;
use crate::specs::{Arg, Args, Parsed, Role, Shape};
use protocol::verdict::Verdict;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Where a written or loaded path sits in a value: `None` when the value names none
/// (`--print=sysroot`, `--cov-report=html`, `-p no:cacheprovider`).
fn path_in(text: &str, shape: Shape) -> Option<&str> {
    match shape {
        Shape::Path | Shape::Module => Some(text),
        Shape::After(sep) => text.split_once(sep).map(|(_, path)| path),
        Shape::Plugin => (!text.starts_with("no:")).then_some(text),
        Shape::Property => Some(text),
    }
}

/// Whether a module value is written as a path (which the policy can place) rather than as a
/// name looked up where it cannot see (`node_modules` up the tree, `NODE_PATH`, Python's
/// `sys.path` and site-packages).
fn is_path_like(text: &str) -> bool {
    text.starts_with("./")
        || text.starts_with("../")
        || text.starts_with('/')
        || text.starts_with("~/")
        || matches!(text, "." | "..")
        || (text.ends_with(".py") && text.contains('/'))
}

/// Characters a path may hold for the policy to call it a path: a configuration option that also
/// takes inline text (`jest -c '{"rootDir": …}'`) is not a path, and inline text is not rated.
fn is_plain_path(text: &str) -> bool {
    let globbing = text.contains(['*', '?', '[']);
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-+@~,%*?[]".contains(&b) || b >= 0x80)
        // A runner's own glob (`'test/**/*.js'`) is rated by where it starts; `**` may match no
        // directory, so a `..` after one could lead anywhere.
        && !(globbing && text.split('/').any(|c| c == ".."))
}

/// Whether `path` is `dir` or below it. Both are absolute and lexically folded, so comparing
/// bytes is comparing components; `Path::starts_with` walks components and cost a build command
/// ten thousand instructions per verdict.
fn is_within(path: &Path, dir: &Path) -> bool {
    let (p, d) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    p.starts_with(d) && (p.len() == d.len() || p[d.len()] == b'/' || d.ends_with(b"/"))
}

impl Policy {
    /// Every option value by its role; operands of commands that load what they name.
    pub(super) fn rate_option_values(
        &self,
        parsed: &Parsed<'_>,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        for (option, values) in &parsed.options {
            // `git -C DIR` reads the repository there, whatever it holds.
            let recursive = *option == "-C" && parsed.spec.name.starts_with("git");
            for v in values {
                match v.role {
                    Role::Read => {
                        self.rate_read_value(v, recursive, parsed, line, ctx, cwds, parts)
                    }
                    Role::Write(shape) => self.rate_write(option, v, shape, line, ctx, cwds, parts),
                    Role::Load(shape) => self.rate_load(option, v, shape, line, ctx, cwds, parts),
                }
            }
        }
        let modules = parsed.spec.args == Args::Modules
            || parsed
                .spec
                .modules_with
                .as_ref()
                .is_some_and(|with| crate::specs::Spec::given(parsed, with));
        let shape = match parsed.spec.args {
            Args::Loads if !modules => Some(Shape::Path),
            _ if modules => Some(Shape::Module),
            _ => None,
        };
        if let Some(shape) = shape {
            // The script or pattern comes first (`npm run NAME …`).
            let skip_first = parsed
                .spec
                .first_text_unless
                .as_ref()
                .is_some_and(|unless| !crate::specs::Spec::given(parsed, unless));
            for a in parsed.operands.iter().skip(usize::from(skip_first)) {
                self.rate_load("", a, shape, line, ctx, cwds, parts);
            }
        }
    }

    /// A value that is text or a path it reads: static ones are rated as reads; one only known at
    /// run time asks where the command reads paths.
    #[allow(clippy::too_many_arguments)]
    fn rate_read_value(
        &self,
        v: &Arg<'_>,
        recursive: bool,
        parsed: &Parsed<'_>,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        if v.word.dynamic && parsed.spec.args == Args::Text {
            return;
        }
        if v.text.is_empty() || (!v.word.dynamic && v.text.starts_with('-')) {
            return;
        }
        let how = How {
            recursive,
            names_only: false,
        };
        self.rate_arg(v.text, v.word, how, line, ctx, cwds, parts);
    }

    /// A value naming a path the program writes: allowed only where the write rules allow
    /// (inside the workspace, outside git's locations), from every directory it may run in.
    #[allow(clippy::too_many_arguments)]
    fn rate_write(
        &self,
        option: &str,
        v: &Arg<'_>,
        shape: Shape,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let Some(path) = path_in(v.text, shape) else {
            return;
        };
        if path == "-" || is_harmless_device(path) {
            return;
        }
        let problem = if v.word.may_differ() || v.word.has_glob() {
            Some("a path only known at run time".to_owned())
        } else {
            match places(path, cwds, ctx) {
                Err(why) => Some(format!("`{}`, which {why}", excerpt_of(path))),
                Ok(places) => {
                    for abs in places {
                        let (verdict, rule, why) = self.rate_abs(Access::Write, &abs, ctx);
                        if verdict > Verdict::Allow {
                            parts.push(Part {
                                verdict,
                                rule,
                                why: format!(
                                    "`{}`: `{option}` writes the file it names: {why}",
                                    excerpt_of(line)
                                ),
                                key: ApprovalKey::Path {
                                    access: Access::Write,
                                    path: abs.display().to_string(),
                                },
                            });
                        }
                    }
                    None
                }
            }
        };
        if let Some(what) = problem {
            let why = format!(
                "`{}`: `{option}` writes {what}; a write is allowed only inside the workspace",
                excerpt_of(line)
            );
            parts.push(command_part(Verdict::Ask, "option roles".into(), why, line));
        }
    }

    /// A value (or operand, `option` empty) naming code or configuration the program loads:
    /// allowed only when it is a path inside the workspace, from every directory it may run in.
    #[allow(clippy::too_many_arguments)]
    fn rate_load(
        &self,
        option: &str,
        v: &Arg<'_>,
        shape: Shape,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let Some(mut path) = path_in(v.text, shape) else {
            return;
        };
        if option.is_empty() {
            // A test id (`tests/test_x.py::TestA::test_b`): the file is the part before `::`.
            path = path.split_once("::").map_or(path, |(file, _)| file);
        }
        if !v.word.may_differ() && v.builtins.iter().any(|b| b == path) {
            return;
        }
        let what = if option.is_empty() {
            format!("`{}`", excerpt_of(v.text))
        } else {
            format!("`{option} {}`", excerpt_of(v.text))
        };
        let problem = if v.word.may_differ() || v.word.has_glob() {
            Some("its value is only known at run time".to_owned())
        } else if shape == Shape::Property {
            let name = path.split_once('=').map_or(path, |(name, _)| name);
            if v.builtins.iter().any(|b| b == name) {
                return;
            }
            Some(format!(
                "`{}` is a property any part of the build may read (a JVM's agents, where \
                 packages come from); only {} pass",
                excerpt_of(name),
                v.builtins.join(", ")
            ))
        } else if matches!(shape, Shape::Module | Shape::Plugin) && !is_path_like(path) {
            Some(format!(
                "`{}` is a module name, looked up where the policy cannot see (installed \
                 packages, not only the workspace); written as a path inside the workspace \
                 (`./…`) it is the project's code",
                excerpt_of(path)
            ))
        } else if !is_plain_path(path) {
            Some(format!(
                "`{}` is not a plain path (inline configuration is not read by the policy)",
                excerpt_of(path)
            ))
        } else {
            match places(path, cwds, ctx) {
                Err(why) => Some(format!("the path {why}")),
                Ok(places) => places
                    .iter()
                    .find(|abs| !is_within(abs, ctx.workspace))
                    .map(|abs| format!("{} is outside the workspace", abs.display())),
            }
        };
        match problem {
            Some(problem) => {
                let why = format!(
                    "`{}`: {what} loads code or configuration, and {problem}; only the \
                     workspace's own is allowed without asking",
                    excerpt_of(line)
                );
                parts.push(command_part(Verdict::Ask, "option roles".into(), why, line));
            }
            // Inside the workspace: the project's code; still a read of what it names (`.env`).
            None => {
                let how = How::default();
                self.rate_arg(path, v.word, how, line, ctx, cwds, parts);
            }
        }
    }

    /// A build, test or linter runs the code of the project in its working directory: every
    /// directory a `cd` may have moved it to must be inside the workspace.
    pub(super) fn rate_project_dirs(
        &self,
        line: &str,
        ctx: &Context<'_>,
        cwds: &Cwds,
        parts: &mut Vec<Part>,
    ) {
        let problem = match cwds.known() {
            None => Some("a directory only known at run time".to_owned()),
            Some(dirs) => dirs
                .iter()
                .find(|d| !is_within(d, ctx.workspace))
                .map(|d| format!("{}, outside the workspace", d.display())),
        };
        if let Some(dir) = problem {
            let why = format!(
                "`{}` runs the code of the project in {dir} (after a `cd`); only the \
                 workspace's own code runs without asking",
                excerpt_of(line)
            );
            parts.push(command_part(Verdict::Ask, "option roles".into(), why, line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_by_whole_components() {
        let ws = Path::new("/work/project");
        assert!(is_within(Path::new("/work/project"), ws));
        assert!(is_within(Path::new("/work/project/src"), ws));
        assert!(!is_within(Path::new("/work/project-other"), ws));
        assert!(!is_within(Path::new("/work"), ws));
        assert!(is_within(Path::new("/x"), Path::new("/")));
    }
}
