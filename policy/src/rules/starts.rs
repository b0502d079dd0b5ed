//! The literal starts of a set of bash globs: most command lines start with none of them, and
//! are then known to match no rule without running the glob set (which was a tenth of a
//! compound command's rating).

/// The literal text every glob of a set starts with (up to its first `*`, `?`, `[`, `{` or
/// `\`), by first byte: a line that starts with none of them matches no glob, since a glob's
/// match starts with its literal start (globset anchors its patterns at both ends).
#[derive(Debug, Clone)]
pub(super) struct Starts {
    by_first: Vec<Vec<Box<str>>>,
}

impl Starts {
    /// The starts of `patterns`; `None` when one has no literal start (it may match any line).
    pub(super) fn of<'p>(patterns: impl IntoIterator<Item = &'p str>) -> Option<Self> {
        let mut by_first: Vec<Vec<Box<str>>> = vec![Vec::new(); 256];
        for pattern in patterns {
            let start = &pattern[..pattern
                .find(['*', '?', '[', '{', '\\'])
                .unwrap_or(pattern.len())];
            let &first = start.as_bytes().first()?;
            let list = &mut by_first[usize::from(first)];
            if !list.iter().any(|s| start.starts_with(&**s)) {
                list.retain(|s| !s.starts_with(start));
                list.push(start.into());
            }
        }
        Some(Self { by_first })
    }

    /// Whether `line` starts with the literal start of some glob (else it matches none).
    pub(super) fn may_match(&self, line: &str) -> bool {
        line.as_bytes().first().is_some_and(|&b| {
            self.by_first[usize::from(b)]
                .iter()
                .any(|s| line.starts_with(&**s))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::{Glob, GlobSetBuilder};

    #[test]
    fn a_line_the_starts_rule_out_matches_no_glob() {
        let patterns = [
            "rm *",
            "rm",
            "git push *",
            "git push",
            "git reset *--hard*",
            "mkfs*",
            "r\\m *",
            "ls [a-z]*",
            "ca{t,rgo} *",
            "a?c",
            "cargo build*",
            "git",
            "x{,y}z",
        ];
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            builder.add(Glob::new(p).unwrap());
        }
        let set = builder.build().unwrap();
        let Some(starts) = Starts::of(patterns) else {
            panic!("every pattern has a literal start");
        };
        let lines = [
            "rm",
            "rm -rf /",
            "rmdir x",
            "r",
            "",
            "git",
            "git push",
            "git push origin",
            "git status",
            "git reset --hard",
            "mkfs.ext4 /dev/x",
            "ls abc",
            "ls",
            "cat x",
            "cargo x",
            "carg",
            "abc",
            "ac",
            "xz",
            "xyz",
            "cargo build --release",
            "rm\\x",
            " rm x",
        ];
        for line in lines {
            if set.is_match(line) {
                assert!(starts.may_match(line), "{line:?} matches but was ruled out");
            }
        }
        assert!(!starts.may_match("grep -r x ."));
        assert!(!starts.may_match("sort"));
        assert!(
            Starts::of(["*", "rm *"]).is_none(),
            "a glob starting with `*` rules nothing out"
        );
    }
}
