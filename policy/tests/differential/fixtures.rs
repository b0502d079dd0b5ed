//! The files every case starts with: a small workspace (a git repository among them) and a home.

/// The workspace every command starts in: file names match the harmless corpus, so globs
/// expand to real files and `cd` finds its directories.
pub const WORKSPACE: &[(&str, &str)] = &[
    (
        "README.md",
        "# demo\n\nInstall: cargo build\nTODO: write the guide\n",
    ),
    ("CHANGELOG.md", "# Changes\n\n## 0.1.0\n- first\n"),
    (
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
    ),
    ("Cargo.lock", "version = 4\n"),
    ("src/main.rs", "fn main() {\n    demo::run();\n}\n"),
    (
        "src/lib.rs",
        "pub fn run() {}\n// TODO: parse\npub fn parse() {}\n",
    ),
    ("src/util.rs", "pub fn helper() {}\n"),
    ("src/index.ts", "export const x = 1;\n"),
    ("tests/integration.rs", "#[test]\nfn works() {}\n"),
    ("tests/test_app.py", "def test_main():\n    assert True\n"),
    (
        "app.py",
        "import os\n\nclass App:\n    def run(self):\n        pass\n",
    ),
    ("setup.py", "from setuptools import setup\nsetup()\n"),
    ("pyproject.toml", "[project]\nname = \"demo\"\n"),
    ("requirements.txt", "pytest\n"),
    (
        "package.json",
        "{\"name\": \"demo\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"jest\"}}\n",
    ),
    ("tsconfig.json", "{}\n"),
    ("go.mod", "module demo\n\ngo 1.22\n"),
    ("main.go", "package main\n\nfunc main() {}\n"),
    ("pkg/parse/parse.go", "package parse\n"),
    ("Makefile", "test:\n\ttrue\n"),
    ("data.json", "[{\"a\": 1}, {\"a\": 2}]\n"),
    ("data.csv", "name,size,count\na,1,2\nb,3,4\n"),
    ("f", "hello world\nsecond line\n"),
    ("f.json", "{\"k\": \"v\"}\n"),
    ("a", "1\n2\n3\n"),
    ("b", "2\n3\n4\n"),
    ("log.txt", "INFO start\nWARN slow\n"),
    ("notes.txt", "notes\n"),
    ("docs/index.md", "# Docs\n"),
    ("docs/guide.md", "# Guide\nTODO\n"),
    (".gitignore", "target/\n"),
    (".env", "API_KEY=workspace-secret\n"),
    (".git/HEAD", "ref: refs/heads/main\n"),
    (".git/config", "[core]\n\tbare = false\n"),
    ("sub/README.md", "# sub\n"),
    ("dir/README.md", "# dir\n"),
    ("scripts/check.sh", "echo check\n"),
];

/// The home directory: secrets that globs, `cd ~` and recursive readers would reach.
pub const HOME: &[(&str, &str)] = &[
    (".ssh/id_rsa", "-----BEGIN FAKE PRIVATE KEY-----\n"),
    (".ssh/id_ed25519", "-----BEGIN FAKE PRIVATE KEY-----\n"),
    (".ssh/config", "Host *\n"),
    (
        ".aws/credentials",
        "[default]\naws_secret_access_key = fake\n",
    ),
    (".netrc", "machine example.com password fake\n"),
    (".git-credentials", "https://user:fake@example.com\n"),
    (".pgpass", "*:*:*:*:fake\n"),
    (".bashrc", "# rc\n"),
    (".gitconfig", "[user]\n\tname = dev\n"),
];
