//! The bash tool: `sh -c COMMAND` as init of the worker's PID namespace, stdin from /dev/null,
//! stdout and stderr merged into one pipe in arrival order, streamed, capped, and killed whole on
//! timeout.

use crate::channel::Channel;
use crate::output::Capped;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, dup2_stderr, dup2_stdin, dup2_stdout, execve, fork, pipe};
use protocol::worker::{FromWorker, LockdownReport, OutputChunk, SandboxSpec, ToolResult};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// Bytes of output streamed to the supervisor as it comes; the rest only reaches the result's
/// head and tail, so a flood of output costs the supervisor nothing.
const STREAM_LIMIT: u64 = 256 * 1024;

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
    let argv = [cstring("sh"), cstring("-c"), cstring(command)];
    let env: Vec<CString> = spec
        .env
        .iter()
        .map(|v| cstring(&format!("{}={}", v.name, v.value)))
        .collect();
    let shell = cstring("/bin/sh");
    let devnull = match std::fs::File::open("/dev/null") {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot open /dev/null: {e}"), lockdown, start),
    };
    let (read_end, write_end) = match pipe() {
        Ok(p) => p,
        Err(e) => {
            return failed(
                format!("cannot create the output pipe: {e}"),
                lockdown,
                start,
            );
        }
    };
    // SAFETY: the worker is single-threaded, so the child may run any code; it only sets up its
    // descriptors and execs (or exits).
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            let ok = dup2_stdin(devnull.as_fd()).is_ok()
                && dup2_stdout(write_end.as_fd()).is_ok()
                && dup2_stderr(write_end.as_fd()).is_ok();
            if ok {
                drop(read_end);
                drop(write_end);
                let _ = execve(&shell, &argv, &env);
            }
            // SAFETY: _exit is async-signal-safe and skips destructors meant for the parent.
            unsafe { libc::_exit(127) }
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => {
            return failed(
                format!("cannot start the command: fork: {e}"),
                lockdown,
                start,
            );
        }
    };
    drop(write_end);
    drop(devnull);

    let timeout = Duration::from_millis(spec.limits.timeout_ms);
    let cap = usize::try_from(spec.limits.output_cap_bytes).unwrap_or(usize::MAX);
    let mut capped = Capped::new(cap);
    let mut streamed = 0u64;
    let mut timed_out = false;
    let mut pipe = std::fs::File::from(read_end);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            timed_out = true;
            // The child is the namespace's init: killing it kills everything the command started.
            let _ = kill(child, Signal::SIGKILL);
            break;
        }
        let ms = u16::try_from(left.as_millis().min(10_000)).unwrap_or(10_000);
        let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(nix::Error::EINTR) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                capped.push(&buf[..n]);
                if streamed < STREAM_LIMIT {
                    streamed += n as u64;
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let _ = channel.send(&FromWorker::Output(OutputChunk { text }));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    // After a timeout the pipe may still hold output; whatever is left is dropped with it.
    let exit_code = reap(child);
    let bytes_seen = capped.total();
    let (mut content, truncated) = capped.finish();
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
