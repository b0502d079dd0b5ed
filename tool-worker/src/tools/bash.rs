//! The bash tool: `bash --noprofile --norc -c COMMAND` as init of the worker's PID namespace, stdin from /dev/null,
//! stdout and stderr merged into one pipe in arrival order, streamed, capped, and killed whole on
//! timeout.
//!
//! Streaming sends what the pipe gave in chunks, not a chunk per read: a program that writes a
//! byte at a time would otherwise make a frame, and a session-log event, per byte (100,000 one-byte
//! writes made some 50,000 events and a 5 MB log). A chunk goes when [`CHUNK_BYTES`] are waiting,
//! when the first waiting byte has waited [`CHUNK_WAIT`], and at the end: output is never held back
//! longer than that, and bytes are never dropped or reordered. The one exception is a character
//! cut by a chunk's end: its first bytes wait for the rest (or the end), since alone they could
//! only be shown as U+FFFD.

use crate::channel::Channel;
use crate::output::Capped;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
use nix::sys::signal::SigSet;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, pipe2};
use protocol::worker::{FromWorker, LockdownReport, OutputChunk, SandboxSpec, ToolResult};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

/// Bytes of output streamed to the supervisor as it comes; the rest only reaches the result's
/// head and tail, so a flood of output costs the supervisor nothing.
const STREAM_LIMIT: u64 = 256 * 1024;

/// A streamed chunk is sent once this many bytes wait...
const CHUNK_BYTES: usize = 16 * 1024;

/// ...or once the first of them has waited this long.
const CHUNK_WAIT: Duration = Duration::from_millis(50);

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

fn failed(message: String, lockdown: LockdownReport, start: Instant) -> ToolResult {
    ToolResult {
        content: message,
        is_error: true,
        exit_code: None,
        timed_out: false,
        truncated: false,
        bytes_seen: 0,
        duration_ms: start.elapsed().as_millis() as u64,
        lockdown,
    }
}

/// Runs `command`.
pub fn run(
    command: &str,
    spec: &SandboxSpec,
    lockdown: LockdownReport,
    channel: &mut Channel,
) -> ToolResult {
    let start = Instant::now();
    let (read_end, write_end) = match pipe2(OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => {
            return failed(
                format!("cannot create the output pipe: {e}"),
                lockdown,
                start,
            );
        }
    };
    let child = match spawn(command, spec, write_end.as_fd()) {
        Ok(child) => child,
        Err(message) => return failed(message, lockdown, start),
    };
    drop(write_end);

    let timeout = Duration::from_millis(spec.limits.timeout_ms);
    let deadline = start + timeout;
    let cap = usize::try_from(spec.limits.output_cap_bytes).unwrap_or(usize::MAX);
    let mut output = Output {
        capped: Capped::new(cap),
        streamed: 0,
        unsent: Vec::new(),
        waiting_since: None,
        pipe: Some(std::fs::File::from(read_end)),
    };
    let (exit_code, timed_out) = watch(child, deadline, &mut output, channel);
    let bytes_seen = output.capped.total();
    let (mut content, truncated) = output.capped.finish();
    if timed_out {
        content.push_str(&format!(
            "\n[timed out after {} s: the command and everything it started were killed. Narrow the command (fewer files, a smaller test filter) or raise the timeout.]",
            timeout.as_secs_f64()
        ));
    }
    ToolResult {
        content,
        is_error: timed_out || exit_code != Some(0),
        exit_code,
        timed_out,
        truncated,
        bytes_seen,
        duration_ms: start.elapsed().as_millis() as u64,
        lockdown,
    }
}

/// The shell that runs every command: bash, the grammar the policy parses, at a fixed path.
pub const SHELL: &str = "/bin/bash";

/// Variables bash would read to run code or change how it parses before the command runs
/// (start-up files, exported functions, options, the trace prompt): never passed to it, whatever
/// the spec says, so the command runs as the policy read it.
fn shell_may_see(name: &str) -> bool {
    !matches!(
        name,
        "BASH_ENV"
            | "ENV"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "PS4"
            | "IFS"
            | "CDPATH"
            | "GLOBIGNORE"
            | "PROMPT_COMMAND"
            | "BASH_XTRACEFD"
            | "EXECIGNORE"
            | "POSIXLY_CORRECT"
    ) && !name.starts_with("BASH_FUNC_")
}

/// Starts `bash --noprofile --norc -c COMMAND` with stdin from /dev/null and stdout and stderr
/// into `out`. `posix_spawn` (a vfork, not a copy of the worker) with every signal back to its
/// default disposition and none blocked: the worker ignores SIGPIPE, and an ignored signal would
/// survive the exec (`yes | head -1` would then complain of a broken pipe instead of ending).
fn spawn(command: &str, spec: &SandboxSpec, out: BorrowedFd<'_>) -> Result<Pid, String> {
    if let Err(e) = nix::unistd::access(SHELL, nix::unistd::AccessFlags::X_OK) {
        return Err(format!(
            "cannot run the command: {SHELL}: {e}. Commands run with bash, the grammar the policy \
             judges them by; install bash to run commands"
        ));
    }
    let argv = [
        cstring("bash"),
        cstring("--noprofile"),
        cstring("--norc"),
        cstring("-c"),
        cstring(command),
    ];
    let env: Vec<CString> = spec
        .env
        .iter()
        .filter(|v| shell_may_see(&v.name))
        .map(|v| cstring(&format!("{}={}", v.name, v.value)))
        .collect();
    let devnull =
        std::fs::File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
    let failed = |what: &str, e: nix::Error| format!("cannot start the command: {what}: {e}");
    let mut actions = PosixSpawnFileActions::init().map_err(|e| failed("file actions", e))?;
    for (fd, target) in [
        (devnull.as_raw_fd(), 0),
        (out.as_raw_fd(), 1),
        (out.as_raw_fd(), 2),
    ] {
        actions
            .add_dup2(fd, target)
            .map_err(|e| failed("file actions", e))?;
    }
    let mut attr = PosixSpawnAttr::init().map_err(|e| failed("attributes", e))?;
    attr.set_sigdefault(&SigSet::all())
        .and_then(|()| attr.set_sigmask(&SigSet::empty()))
        .and_then(|()| {
            attr.set_flags(
                PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK,
            )
        })
        .map_err(|e| failed("attributes", e))?;
    posix_spawn(SHELL, &actions, &attr, &argv, &env).map_err(|e| failed(SHELL, e))
}

/// The command's output as it is collected.
struct Output {
    capped: Capped,
    /// Bytes taken for streaming, sent or not.
    streamed: u64,
    /// Bytes taken for streaming and not sent yet.
    unsent: Vec<u8>,
    /// When the first byte of `unsent` that can be sent arrived; `None` when none can (nothing
    /// waits, or only the first bytes of a character).
    waiting_since: Option<Instant>,
    /// The read end, until it reports end of file.
    pipe: Option<std::fs::File>,
}

impl Output {
    /// Reads what is there; closes the pipe, and sends what waits, at end of file or on an error.
    fn read(&mut self, buf: &mut [u8], channel: &mut Channel) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        match pipe.read(buf) {
            Ok(0) => self.close(channel),
            Ok(n) => {
                self.capped.push(&buf[..n]);
                if self.streamed < STREAM_LIMIT {
                    self.streamed += n as u64;
                    self.unsent.extend_from_slice(&buf[..n]);
                    self.waiting_since.get_or_insert_with(Instant::now);
                    if self.unsent.len() >= CHUNK_BYTES {
                        self.send(channel, false);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => self.close(channel),
        }
    }

    /// The pipe is done with: sends everything that waits.
    fn close(&mut self, channel: &mut Channel) {
        self.pipe = None;
        self.send(channel, true);
    }

    /// When what waits must be sent, if anything does.
    fn due(&self) -> Option<Instant> {
        self.waiting_since.map(|since| since + CHUNK_WAIT)
    }

    /// Sends what waits if it has waited [`CHUNK_WAIT`].
    fn send_if_due(&mut self, now: Instant, channel: &mut Channel) {
        if self.due().is_some_and(|due| due <= now) {
            self.send(channel, false);
        }
    }

    /// Sends what waits as one chunk; unless `all`, the first bytes of a character cut at the end
    /// keep waiting, for the rest of it.
    fn send(&mut self, channel: &mut Channel, all: bool) {
        let keep = if all { 0 } else { cut_character(&self.unsent) };
        let ready = self.unsent.len() - keep;
        self.waiting_since = None;
        if ready == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&self.unsent[..ready]).into_owned();
        self.unsent.drain(..ready);
        let _ = channel.send(&FromWorker::Output(OutputChunk { text }));
    }
}

/// How many bytes at the end of `bytes` are the start of a character whose rest has not come:
/// 0 when it ends on a whole character (or on bytes that are no UTF-8 at all).
fn cut_character(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xc0 == 0x80 {
            continue; // a continuation byte: the character starts further back
        }
        let length = match byte {
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            _ => 1,
        };
        return if back < length { back } else { 0 };
    }
    0
}

/// Collects output until the command has exited and the pipe is closed, or the deadline: the
/// whole call, waiting included, is bounded by it. When the command exits, whatever it left
/// running is killed (the worker is the PID namespace's init), so background processes holding
/// the pipe cannot stretch the call; on the deadline everything is killed. Returns the exit code
/// (124 on timeout, like `timeout(1)`) and whether the deadline struck.
fn watch(
    child: Pid,
    deadline: Instant,
    output: &mut Output,
    channel: &mut Channel,
) -> (Option<i32>, bool) {
    let exited = pidfd(child);
    let mut buf = vec![0u8; 64 * 1024];
    let mut code: Option<Option<i32>> = None;
    loop {
        if code.is_some() && output.pipe.is_none() {
            break;
        }
        let now = Instant::now();
        output.send_if_due(now, channel);
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            output.send(channel, true);
            kill_everything(child);
            let _ = reap(child);
            reap_namespace(Instant::now() + NAMESPACE_GRACE);
            return (Some(124), true);
        }
        // Woken for the deadline, or for what waits to be sent (rounded up: never too early).
        let wait = output
            .due()
            .map_or(left, |due| left.min(due.saturating_duration_since(now)));
        let ms = u16::try_from(wait.as_micros().div_ceil(1000).min(10_000)).unwrap_or(10_000);
        let mut fds = Vec::with_capacity(2);
        if let Some(pipe) = &output.pipe {
            fds.push(PollFd::new(pipe.as_fd(), PollFlags::POLLIN));
        }
        let watch_exit = code.is_none() && exited.is_some();
        if let (true, Some(fd)) = (watch_exit, &exited) {
            fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
        }
        if fds.is_empty() {
            // No pidfd (an old kernel) and the pipe is closed: wait for the command as before.
            code = Some(reap(child));
            continue;
        }
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(nix::Error::EINTR) => continue,
            Ok(_) => {}
            Err(_) => {
                output.send(channel, true);
                kill_everything(child);
                let code = reap(child);
                reap_namespace(deadline);
                return (code, false);
            }
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        drop(fds);
        let pipe_ready = output.pipe.is_some() && ready.first().copied().unwrap_or(false);
        let exit_ready = watch_exit && ready.last().copied().unwrap_or(false);
        if pipe_ready {
            output.read(&mut buf, channel);
        }
        if exit_ready {
            code = Some(reap(child));
            // What the command left behind holds no pipe open past this point.
            kill_everything(child);
        }
    }
    output.send(channel, true);
    // Everything the command left was killed when it exited; wait until it is gone, so that when
    // the result is sent the namespace holds the worker alone and nothing can still write. What
    // is still there at the deadline (a rename queued in the kernel behind a slow unlink, in
    // uninterruptible sleep, lands whenever that ends) makes the call a timed-out one: the
    // supervisor then checks the workspace only once the namespace is gone.
    if !reap_namespace(deadline.max(Instant::now() + NAMESPACE_GRACE)) {
        return (Some(124), true);
    }
    (code.flatten(), false)
}

/// How long killed processes may take to go after the command or its deadline.
const NAMESPACE_GRACE: Duration = Duration::from_millis(500);

/// As the PID namespace's init, reaps every process left in it (they have been sent SIGKILL)
/// until none is left or `until`; whether none is left. Elsewhere does nothing (and says so).
fn reap_namespace(until: Instant) -> bool {
    if nix::unistd::getpid().as_raw() != 1 {
        return true;
    }
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if Instant::now() >= until {
                    return false;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Ok(_) | Err(nix::Error::EINTR) => {}
            // ECHILD: no process is left in the namespace but this one.
            Err(_) => return true,
        }
    }
}

/// A pidfd for `child`, readable when it exits; `None` where the kernel has none.
fn pidfd(child: Pid) -> Option<std::os::fd::OwnedFd> {
    crate::lockdown::process::pidfd_open(child.as_raw()).ok()
}

/// Kills the command and everything in the PID namespace. As the namespace's init (pid 1) the
/// worker signals every other process in it with `kill(-1)`; anywhere else `kill(-1)` would
/// reach every process of the uid, so then only the command is killed (its own namespace, if it
/// is init of one, goes with it). [`reap_namespace`] reaps them.
fn kill_everything(child: Pid) {
    let _ = kill(child, Signal::SIGKILL);
    if nix::unistd::getpid().as_raw() == 1 {
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    }
}

/// Waits for the child; its exit code, or 128 + the signal that killed it.
fn reap(child: Pid) -> Option<i32> {
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => return Some(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Some(128 + sig as i32),
            Ok(_) | Err(nix::Error::EINTR) => continue,
            Err(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cut_character;

    #[test]
    fn only_the_start_of_a_character_cut_at_the_end_is_kept_back() {
        let text = "aé€😀";
        let bytes = text.as_bytes();
        // Every cut of the text: what is kept back is the start of the character cut, no more.
        for end in 0..=bytes.len() {
            let kept = cut_character(&bytes[..end]);
            assert!(text.is_char_boundary(end - kept), "{end}: {kept} kept back");
            let whole = text.is_char_boundary(end);
            assert_eq!(kept == 0, whole, "{end}: {kept} kept back");
        }
        // Bytes that are no UTF-8 wait for nothing: they are sent (as U+FFFD) at once.
        for junk in [
            &b"\xff"[..],
            b"a\x80",
            b"\x80\x80\x80\x80",
            b"\xc3\xa9\xa9",
            b"\xc0",
        ] {
            assert_eq!(cut_character(junk), 0, "{junk:?}");
        }
        assert_eq!(cut_character(b"\xf0\x9f\x98"), 3);
    }
}
