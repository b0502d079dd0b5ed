//! A terminal for the end-to-end suites: `tmux` runs a command in a detached 200×50 pane on a
//! tmux server of its own; `send-keys` types, `capture-pane` reads the screen, polled
//! until a deadline.
#![allow(dead_code)] // each suite uses its own part of it

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the pane's shell prints when the command has exited, before its exit code. The shell
/// (which traps SIGINT, so Ctrl-C reaches only the command) waits for the command itself:
/// tmux's own notice of a pane's exit was seen to come late.
const EXITED: &str = "[command exited: ";

/// How long any one thing may take to show on the screen.
const PATIENCE: Duration = Duration::from_secs(30);

/// `text` quoted for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `cmd` (program, arguments and its cleared environment) as one shell command line.
fn shell_line(cmd: &Command) -> String {
    let mut line = String::from("env -i");
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            line.push_str(&format!(
                " {}={}",
                k.to_string_lossy(),
                quote(&v.to_string_lossy())
            ));
        }
    }
    line.push(' ');
    line.push_str(&quote(&cmd.get_program().to_string_lossy()));
    for a in cmd.get_args() {
        line.push(' ');
        line.push_str(&quote(&a.to_string_lossy()));
    }
    line
}

/// One tmux pane running a command, on a tmux server of its own (panes started at once by
/// parallel tests would race to start a shared one); the server is killed on drop.
pub struct Pane {
    /// The tmux server's socket name (`-L`).
    server: String,
    /// The session's name.
    name: String,
}

impl Pane {
    /// Starts `cmd` in `dir`, in a detached 200×50 pane that stays after the command exits.
    pub fn start(cmd: &Command, dir: &Path) -> Pane {
        let pane = Pane {
            server: agentd_e2e::unique("agentd-e2e-tmux"),
            name: agentd_e2e::unique("repl"),
        };
        let status = Command::new("tmux")
            .args(["-L", &pane.server, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "200", "-y", "50", "-s", &pane.name, "-c"])
            .arg(dir)
            .arg(format!(
                "trap : INT; {}; echo \"{EXITED}$?]\"; exec sleep 3600",
                shell_line(cmd)
            ))
            .args([";", "set-option", "-t", &pane.name, "history-limit", "5000"])
            .stdin(Stdio::null())
            .status()
            .expect("tmux is needed: scripts/test.sh installs it");
        assert!(status.success(), "tmux new-session failed");
        pane
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.server]);
        c
    }

    /// Sends tmux key names (`Enter`, `C-c`).
    pub fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types `text` literally, then Enter.
    pub fn type_line(&self, text: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
        self.keys(&["Enter"]);
    }

    /// The screen and its scrollback, as text; with `-e` its colours and attributes as escapes.
    pub fn capture(&self, escapes: bool) -> String {
        let mut c = self.tmux();
        c.args(["capture-pane", "-p", "-J", "-S", "-", "-t", &self.name]);
        if escapes {
            c.arg("-e");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    }

    /// Waits until `count` occurrences of `needle` are on the screen; returns the screen.
    pub fn wait_for_n(&self, needle: &str, count: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture(false);
            if screen.matches(needle).count() >= count {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "{needle:?} (×{count}) never showed; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `needle` is on the screen; returns the screen.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_for_n(needle, 1)
    }

    /// Waits until the command has exited; returns its exit status.
    pub fn exit_status(&self) -> i32 {
        let screen = self.wait_for(EXITED);
        let code = screen.rsplit(EXITED).next().unwrap_or_default();
        code.split(']').next().unwrap().trim().parse().unwrap()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}
