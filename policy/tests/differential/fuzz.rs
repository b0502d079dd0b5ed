//! The fuzzer: composes harmless and harmful fragments with every separator, quoting and wrapper
//! form, deterministically from a seed, and checks each case two ways:
//! (a) a case holding a harmful fragment is never `allow`;
//! (b) a case the policy allows runs, under the differential oracle, only what is allowed alone.
//!
//! Each fragment has a kind that says which forms keep its meaning, so a composed case is harmful
//! exactly when it holds a harmful fragment: a builtin's harm (`test -v 'a[$(…)]'`) is lost under
//! `env` or `timeout` (they would run /usr/bin/test), an assignment prefix must stay in front of
//! the wrapper, and bash-only text is never handed to `sh -c` (dash). Fragments that are harmless
//! alone but harmful together (`echo -delete` then `| xargs find .`, `cd ~` then `cat .netrc`) are
//! left to (b): the oracle sees what they ran.
#![allow(dead_code)] // shared by the differential test and the fuzz bench

use super::corpus::{ctx, shown};
use super::sandbox::Harness;
use super::{Checked, check_all};
use policy::{Policy, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The default seed (any u64 works; FUZZ_SEED overrides).
pub const SEED: u64 = 0x00ac_e10d_0010;

/// Which forms keep a fragment's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A program found through PATH: any quoting of its name and any wrapper keeps what it does.
    External,
    /// `NAME=value … program`: as External, with wrappers placed after the assignments.
    Assigned,
    /// A bash builtin whose effect needs bash itself: only `command`, `builtin`, `time`, and
    /// shell-level grouping keep it.
    Builtin,
    /// Text bash must read as written (a list, a continuation, an expansion in the name): only
    /// grouping and separators.
    Raw,
}

/// One fragment.
#[derive(Debug, Clone, Copy)]
pub struct Fragment {
    /// The issue's class it attacks, or `""` when harmless.
    pub class: &'static str,
    /// Which forms apply.
    pub kind: Kind,
    /// Assignments before the name (Assigned only).
    pub pre: &'static str,
    /// The command name (empty for Raw).
    pub name: &'static str,
    /// The rest (for Raw: the whole text).
    pub rest: &'static str,
}

const fn ext(class: &'static str, name: &'static str, rest: &'static str) -> Fragment {
    Fragment {
        class,
        kind: Kind::External,
        pre: "",
        name,
        rest,
    }
}
const fn asg(
    class: &'static str,
    pre: &'static str,
    name: &'static str,
    rest: &'static str,
) -> Fragment {
    Fragment {
        class,
        kind: Kind::Assigned,
        pre,
        name,
        rest,
    }
}
const fn bi(class: &'static str, name: &'static str, rest: &'static str) -> Fragment {
    Fragment {
        class,
        kind: Kind::Builtin,
        pre: "",
        name,
        rest,
    }
}
const fn raw(class: &'static str, text: &'static str) -> Fragment {
    Fragment {
        class,
        kind: Kind::Raw,
        pre: "",
        name: "",
        rest: text,
    }
}

/// Harmless alone (from the harmless corpus), including halves of harmful pairs.
pub const HARMLESS: &[Fragment] = &[
    ext("", "ls", "-la"),
    ext("", "cat", "README.md"),
    ext("", "head", "-n 5 src/lib.rs"),
    ext("", "wc", "-l src/lib.rs"),
    ext("", "wc", "-l src/*.rs"),
    ext("", "ls", "*.md"),
    ext("", "grep", "-rn TODO src"),
    ext("", "rg", "-n parse src"),
    ext("", "find", ". -name '*.rs'"),
    ext("", "git", "status"),
    ext("", "git", "log --oneline -5"),
    ext("", "git", "diff --stat"),
    ext("", "date", ""),
    ext("", "id", ""),
    ext("", "seq", "3"),
    ext("", "sed", "-n '1,5p' f"),
    ext("", "awk", "'{print $1}' f"),
    ext("", "jq", ". f.json"),
    ext("", "sort", "f"),
    ext("", "uniq", "-c f"),
    ext("", "cut", "-d, -f1 data.csv"),
    ext("", "tail", "-n 3 log.txt"),
    ext("", "diff", "a b"),
    ext("", "tree", "-L 1"),
    ext("", "stat", "Cargo.toml"),
    ext("", "du", "-sh src"),
    ext("", "uname", "-a"),
    ext("", "nproc", ""),
    ext("", "ps", ""),
    ext("", "cargo", "check"),
    ext("", "cargo", "test"),
    ext("", "npm", "test"),
    ext("", "go", "vet ./..."),
    ext("", "pytest", "-q"),
    ext("", "ruff", "check ."),
    ext("", "make", "test"),
    ext("", "which", "cargo"),
    ext("", "basename", "src/lib.rs"),
    ext("", "cat", ".netrc"),
    ext("", "cat", ".aws/credentials"),
    ext("", "xargs", "grep -n TODO"),
    ext("", "xargs", "rg -n fn"),
    ext("", "xargs", "find . -name x"),
    ext("", "xargs", "sort"),
    bi("", "echo", "hello"),
    bi("", "echo", "-delete"),
    bi("", "echo", "--pre=sh"),
    bi("", "echo", "-o src/lib.rs"),
    bi("", "printf", "'%s\\n' a b"),
    bi("", "true", ""),
    bi("", "false", ""),
    bi("", "pwd", ""),
    bi("", "cd", "src"),
    bi("", "cd", ".."),
    bi("", "cd", "~"),
    bi("", "cd", "/"),
    bi("", "test", "-f Cargo.toml"),
    bi("", "[", "-d src ]"),
    bi("", "command", "-v rg"),
    bi("", "type", "ls"),
    raw("", "[[ -n x ]]"),
    raw("", "x=1"),
    raw("", "for f in *.py; do wc -l \"$f\"; done"),
    raw("", "xxd f | head -2"),
    raw("", "git log --oneline | head -3"),
    asg("", "LANG=C", "sort", "f"),
    asg("", "RUST_BACKTRACE=1", "cargo", "test"),
    asg("", "NO_COLOR=1", "git", "status"),
    asg("", "TZ=UTC", "date", ""),
];

/// Harmful alone, in every form the fuzzer gives them (from the adversarial corpus; the
/// grammar-divergent class is left out: it is harmless to bash, which is what runs here).
pub const HARMFUL: &[Fragment] = &[
    ext("options", "sort", "-o src/lib.rs README.md"),
    ext("options", "sort", "--o src/lib.rs README.md"),
    ext("options", "sort", "--compress-prog=sh -S 1 README.md"),
    ext("options", "tree", "-o src/lib.rs"),
    ext("options", "uniq", "f src/lib.rs"),
    ext("options", "date", "-s @0"),
    ext("options", "rg", "--pre=sh x"),
    ext("options", "rg", "-z x"),
    ext("options", "rg", "--hostname-bin=./evil x"),
    ext("options", "pytest", "--basetemp src"),
    ext("options", "go", "test -exec ./evil ./..."),
    ext(
        "options",
        "cargo",
        "test --config 'build.rustc-wrapper=\"./evil\"'",
    ),
    ext("options", "npm", "test --script-shell=./evil"),
    ext("options", "git", "branch -t x y"),
    ext("options", "git", "-c core.fsmonitor=./evil status"),
    ext("options", "git", "log --output=src/lib.rs"),
    ext("options", "sed", "-n '1e rm -rf src' README.md"),
    ext("options", "awk", "'BEGIN{system(\"rm -rf src\")}'"),
    ext("options", "find", ". -delete"),
    ext("options", "find", ". -exec rm -rf {} +"),
    ext("wrappers", "env", "--uns ls rm -rf src"),
    ext("wrappers", "env", "-S 'rm -rf src'"),
    ext("wrappers", "xargs", "-i rm -rf {}"),
    ext("wrappers", "nice", "--adj 5 rm -rf src"),
    ext("wrappers", "timeout", "--sig KILL 5 rm -rf src"),
    ext("wrappers", "rm", "-rf src"),
    ext("paths", "cat", "~/.ssh/id_*"),
    ext("paths", "cat", "~root/.ssh/id_rsa"),
    ext("paths", "cat", "/proc/self/root/home/dev/.ssh/id_rsa"),
    ext("paths", "cat", "/proc/1/environ"),
    ext("paths", "grep", "-r secret ~"),
    ext("paths", "diff", "-rN docs ~/"),
    ext("paths", "git", "show HEAD:.env"),
    ext("paths", "cat", ".en?"),
    ext("paths", "ps", "e"),
    ext("eval-corners", "echo", "$(( a[$(rm -rf src)] ))"),
    asg(
        "env-prefix",
        "RUSTFLAGS='-C linker=./evil'",
        "cargo",
        "test",
    ),
    asg("env-prefix", "GOFLAGS=-toolexec=./evil", "go", "test ./..."),
    asg("env-prefix", "XDG_CONFIG_HOME=./cfg", "git", "status"),
    asg("env-prefix", "PYTEST_ADDOPTS='-p evil'", "pytest", ""),
    asg(
        "env-prefix",
        "npm_config_script_shell=./evil",
        "npm",
        "test",
    ),
    asg("env-prefix", "GIT_DIR=sub/.git", "git", "log"),
    asg(
        "env-prefix",
        "CARGO_BUILD_RUSTC_WRAPPER=./evil",
        "cargo",
        "check",
    ),
    asg("env-prefix", "RIPGREP_CONFIG_PATH=./evil.rgrc", "rg", "x"),
    bi("eval-corners", "test", "-v 'a[$(rm -rf src)]'"),
    bi("eval-corners", "printf", "-v 'x[$(rm -rf src)]' %s 1"),
    bi("eval-corners", "let", "'a[$(rm -rf src)]=1'"),
    bi("eval-corners", "declare", "'a[$(rm -rf src)]=1'"),
    bi("eval-corners", "read", "'a[$(rm -rf src)]' <<< 1"),
    bi("grammar-bash", "trap", "'rm -rf src' EXIT"),
    bi(
        "grammar-bash",
        "mapfile",
        "-C 'rm -rf src #' -c 1 lines < README.md",
    ),
    bi("wrappers", "command", "-p rm -rf src"),
    bi("wrappers", "exec", "-a ls rm -rf src"),
    raw("eval-corners", "[[ $x -eq 'a[$(rm -rf src)]' ]]"),
    raw("eval-corners", "(( a[$(rm -rf src)] ))"),
    raw("eval-corners", "x='a[$(rm -rf src)]'; echo ${!x}"),
    raw("continuation", "tr\\\nuncate -s 0 src/lib.rs"),
    raw("continuation", "r\\\nm -rf src"),
    raw("continuation", "find . -de\\\nlete"),
    raw("continuation", "sort --out\\\nput=src/lib.rs README.md"),
    raw("grammar-bash", "{rm,-rf,src}"),
    raw("grammar-bash", "$'\\x72\\x6d' -rf src"),
    raw("grammar-bash", "hash -p /usr/bin/rm ls; ls -rf src"),
    raw("grammar-bash", "ls >(rm -rf src)"),
    raw("grammar-bash", "cat < /dev/tcp/127.0.0.1/8080"),
    raw("grammar-bash", "sort {-o,src/lib.rs} README.md"),
    raw("paths", "cd ~ && cat .aws/credentials"),
    raw("paths", "cd ~; cat .netrc"),
    raw("paths", "< ~/.ssh/id_rsa cat"),
    raw("wrappers", "echo -delete | xargs find ."),
    raw("wrappers", "echo src | xargs -i rm -rf {}"),
    raw("wrappers", "ls | xargs -I % sh -c 'echo %'"),
];

/// A deterministic generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One composed case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The command text.
    pub command: String,
    /// The harmful fragments in it (`class: text`).
    pub harmful: Vec<String>,
    /// The forms applied, for the report.
    pub forms: Vec<String>,
}

/// `s` in single quotes, as one bash word.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn joined(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Text that bash and dash read alike (so `sh -c` keeps its meaning).
fn posix(text: &str) -> bool {
    ![
        "[[", "$'", "<(", ">(", "{", "|&", "((", "<<<", "${!", "~root", "/dev/tcp",
    ]
    .iter()
    .any(|b| text.contains(b))
}

/// `X;` in a list, or `X` followed by a newline when X already ends one (a heredoc).
fn term(x: &str) -> String {
    if x.ends_with('\n') {
        x.to_owned()
    } else {
        format!("{x};")
    }
}

/// The command name in one of the forms bash reads as the same name.
fn name_form(rng: &mut Rng, name: &str, forms: &mut Vec<String>) -> String {
    let plain = name.len() >= 2 && name.bytes().all(|c| c.is_ascii_alphanumeric());
    if !plain || !rng.chance(40) {
        return name.to_owned();
    }
    let k = 1 + rng.below(name.len() - 1);
    let (a, b) = name.split_at(k);
    let (form, text) = match rng.below(7) {
        0 => ("backslash", format!("\\{name}")),
        1 => ("single-quoted", format!("'{name}'")),
        2 => ("double-quoted", format!("\"{name}\"")),
        3 => ("split-quotes", format!("{a}''{b}")),
        4 => ("ansi-c", format!("$'{name}'")),
        5 => ("continuation", format!("{a}\\\n{b}")),
        _ => ("quoted-continuation", format!("\"{a}\\\n{b}\"")),
    };
    forms.push(format!("name:{form}"));
    text
}

/// One fragment in a random form: name quoting, a wrapper, then up to two groupings.
fn piece(rng: &mut Rng, f: &Fragment, forms: &mut Vec<String>) -> String {
    let mut text = match f.kind {
        Kind::Raw => f.rest.to_owned(),
        Kind::External | Kind::Assigned | Kind::Builtin => {
            let name = name_form(rng, f.name, forms);
            let body = joined(&[&name, f.rest]);
            let exec_wrappers: &[&str] = &[
                "command",
                "exec",
                "env",
                "timeout 5",
                "timeout -k 1 5",
                "nice",
                "nice -n 5",
                "nohup",
                "stdbuf -oL",
                "time",
                "time -p",
                "xargs",
            ];
            let shell_wrappers: &[&str] = &["command", "builtin", "time"];
            let wrapper = if rng.chance(35) {
                let w = if f.kind == Kind::Builtin {
                    *rng.pick(shell_wrappers)
                } else {
                    *rng.pick(exec_wrappers)
                };
                forms.push(format!("wrapper:{w}"));
                Some(w)
            } else {
                None
            };
            match wrapper {
                // xargs with no input runs its command once, with exactly these arguments.
                Some("xargs") => joined(&[f.pre, "xargs", &body, "< /dev/null"]),
                Some("env") => joined(&["env", f.pre, &body]),
                Some(w) => joined(&[f.pre, w, &body]),
                None => joined(&[f.pre, &body]),
            }
        }
    };
    let simple = f.kind != Kind::Raw;
    if simple && rng.chance(8) {
        forms.push("here-string".to_owned());
        text = format!("{text} <<< input");
    }
    let groupings = if rng.chance(45) {
        1 + usize::from(rng.chance(25))
    } else {
        0
    };
    for _ in 0..groupings {
        text = group(rng, &text, forms);
    }
    text
}

/// `x` inside one of the constructs that run it.
fn group(rng: &mut Rng, x: &str, forms: &mut Vec<String>) -> String {
    loop {
        let (form, text) = match rng.below(17) {
            0 => ("subshell", format!("( {x} )")),
            1 => ("brace-group", format!("{{ {} }}", term(x))),
            2 => ("command-substitution", format!("echo \"$({x})\"")),
            3 if !x.contains(['`', '\\', '\n']) => ("backticks", format!("echo `{x}`")),
            4 => ("process-substitution", format!("cat <({x})")),
            5 => ("if-condition", format!("if {} then :; fi", term(x))),
            6 => ("if-body", format!("if true; then {} fi", term(x))),
            7 => (
                "while-condition",
                format!("while {} do break; done", term(x)),
            ),
            8 => ("for-body", format!("for i in 1; do {} done", term(x))),
            9 => ("case-body", format!("case x in x) {x};; esac")),
            10 => ("function", format!("_fz() {{ {} }}; _fz", term(x))),
            11 => ("bash -c", format!("bash -c {}", sq(x))),
            12 if posix(x) => ("sh -c", format!("sh -c {}", sq(x))),
            13 => ("eval", format!("eval {}", sq(x))),
            14 if !x.contains("\nEOF") => ("heredoc-to-bash", format!("bash <<'EOF'\n{x}\nEOF\n")),
            15 if !x.contains(['\\', '\n']) => {
                ("heredoc-substitution", format!("cat <<EOF\n$({x})\nEOF\n"))
            }
            16 => ("negation", format!("! {x}")),
            _ => continue,
        };
        forms.push(format!("group:{form}"));
        return text;
    }
}

/// `count` cases from `seed`.
pub fn generate(seed: u64, count: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let separators: &[(&str, &str)] = &[
        (";", "; "),
        ("&&", " && "),
        ("||", " || "),
        ("|", " | "),
        ("&", " & "),
        ("newline", "\n"),
        ("|&", " |& "),
    ];
    (0..count)
        .map(|_| {
            let n = 1 + rng.below(3);
            let mut forms = Vec::new();
            let mut harmful = Vec::new();
            let mut command = String::new();
            for i in 0..n {
                let f = if rng.chance(35) {
                    let f = rng.pick(HARMFUL);
                    let text = if f.kind == Kind::Raw {
                        f.rest.to_owned()
                    } else {
                        joined(&[f.pre, f.name, f.rest])
                    };
                    harmful.push(format!("{}: {}", f.class, shown(&text)));
                    f
                } else {
                    rng.pick(HARMLESS)
                };
                let p = piece(&mut rng, f, &mut forms);
                if i > 0 {
                    if command.ends_with('\n') {
                        forms.push("sep:after-heredoc".to_owned());
                    } else {
                        let (name, sep) = rng.pick(separators);
                        forms.push(format!("sep:{name}"));
                        command.push_str(sep);
                    }
                }
                command.push_str(&p);
            }
            if rng.chance(15) {
                command = group(&mut rng, &command, &mut forms);
            }
            Case {
                command,
                harmful,
                forms,
            }
        })
        .collect()
}

/// What a fuzz run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// Cases generated.
    pub cases: usize,
    /// Cases holding a harmful fragment.
    pub with_harmful: usize,
    /// Cases allowed.
    pub allowed: usize,
    /// (a) failures: harmful cases allowed, with the policy's reason.
    pub allowed_harmful: Vec<(Case, String)>,
    /// (b): each allowed case run under the oracle.
    pub checked: Vec<Checked>,
}

/// Generates `count` cases from `seed`, rates them, and runs the allowed ones differentially.
pub fn run(policy: &Policy, harness: &mut Harness, seed: u64, count: usize) -> Outcome {
    let cases = generate(seed, count);
    let ctx = ctx();
    let mut allowed = 0;
    let mut allowed_harmful = Vec::new();
    let mut to_run: Vec<String> = Vec::new();
    for case in &cases {
        let d = policy.check_bash(&case.command, &ctx);
        if d.verdict == Verdict::Allow {
            allowed += 1;
            if !case.harmful.is_empty() {
                allowed_harmful.push((case.clone(), d.reason));
            }
            if !to_run.contains(&case.command) {
                to_run.push(case.command.clone());
            }
        }
    }
    let checked = check_all(policy, harness, &to_run);
    Outcome {
        seed,
        cases: cases.len(),
        with_harmful: cases.iter().filter(|c| !c.harmful.is_empty()).count(),
        allowed,
        allowed_harmful,
        checked,
    }
}

impl Outcome {
    /// Whether both properties held for every case.
    pub fn passed(&self) -> bool {
        self.allowed_harmful.is_empty() && self.checked.iter().all(|c| c.problems.is_empty())
    }

    /// A summary and the failures, grouped so that one engine gap is one entry with examples.
    pub fn report(&self, elapsed: Duration) -> String {
        let diff_failed: Vec<&Checked> = self
            .checked
            .iter()
            .filter(|c| !c.problems.is_empty())
            .collect();
        let mut out = format!(
            "fuzz (seed {:#x}): {} cases, {} with a harmful fragment, {} allowed; \
             (a) {} harmful cases allowed; (b) {} of {} allowed cases ran something not allowed alone; {:.1} s\n",
            self.seed,
            self.cases,
            self.with_harmful,
            self.allowed,
            self.allowed_harmful.len(),
            diff_failed.len(),
            self.checked.len(),
            elapsed.as_secs_f64()
        );
        if !self.allowed_harmful.is_empty() {
            let mut by_fragment: BTreeMap<&str, Vec<&(Case, String)>> = BTreeMap::new();
            let mut by_form: BTreeMap<&str, usize> = BTreeMap::new();
            for item in &self.allowed_harmful {
                for h in &item.0.harmful {
                    by_fragment.entry(h.as_str()).or_default().push(item);
                }
                for f in &item.0.forms {
                    *by_form.entry(f.as_str()).or_default() += 1;
                }
            }
            let mut rows: Vec<_> = by_fragment.into_iter().collect();
            rows.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
            let _ = writeln!(
                out,
                "(a) harmful fragments found allowed, with one example each:"
            );
            for (fragment, items) in rows {
                let (case, reason) = items[0];
                let _ = writeln!(
                    out,
                    "  {:>4}x  {fragment}\n         e.g. {}\n         forms: {}\n         -> allow: {reason}",
                    items.len(),
                    shown(&case.command),
                    case.forms.join(", ")
                );
            }
            let forms: Vec<String> = by_form.iter().map(|(f, n)| format!("{f} {n}")).collect();
            let _ = writeln!(out, "  forms among them: {}", forms.join(", "));
        }
        if !diff_failed.is_empty() {
            let mut by_sig: BTreeMap<String, Vec<&Checked>> = BTreeMap::new();
            for c in &diff_failed {
                let sig = c.problems.first().map_or_else(String::new, signature);
                by_sig.entry(sig).or_default().push(c);
            }
            let mut rows: Vec<_> = by_sig.into_iter().collect();
            rows.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
            let _ = writeln!(
                out,
                "(b) differential failures, by what ran first (up to 2 examples each):"
            );
            for (sig, items) in rows.iter().take(40) {
                let _ = writeln!(out, "  {:>4}x  {sig}", items.len());
                for c in items.iter().take(2) {
                    let _ = writeln!(out, "         case: {}", shown(&c.command));
                    for p in c.problems.iter().take(3) {
                        let _ = writeln!(out, "           {p}");
                    }
                }
            }
        }
        out
    }
}

/// What ran, reduced to its source and program name (after `cd … &&` and assignments), or for
/// a problem without a verdict, its message without the scratch paths.
fn signature(p: &super::oracle::Problem) -> String {
    if p.verdict.is_none() {
        let mut text = p.ran.clone();
        while let Some(start) = text.find("/tmp/agentd-policy-diff.") {
            let end = text[start..]
                .find("/case/")
                .map_or(text.len(), |e| start + e + "/case/".len());
            text.replace_range(start..end, "…/");
        }
        return format!(
            "{}: {}",
            p.source,
            text.chars().take(100).collect::<String>()
        );
    }
    let ran = p.ran.as_str();
    let ran = ran
        .split_once(" && ")
        .filter(|(a, _)| a.starts_with("cd "))
        .map_or(ran, |(_, b)| b);
    let name = ran
        .split_whitespace()
        .find(|w| !super::oracle::is_assignment(w))
        .unwrap_or(ran);
    format!("{}: {name}", p.source)
}
