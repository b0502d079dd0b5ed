//! What `status` reports of this kernel's seccomp (Landlock's ABI comes from the worker's own
//! probe, `tool_worker::lockdown::landlock::kernel_abi`).

/// Whether seccomp filters can be installed here — the actions the kernel offers, from
/// `/proc/sys/kernel/seccomp/actions_avail` — and whether agentd itself runs under a filter
/// (`Seccomp:` of its `/proc/self/status`: 0 none, 1 strict, 2 filter), as under the systemd unit.
pub fn seccomp() -> String {
    let kernel = match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(actions) => format!("filters available ({})", actions.trim()),
        Err(_) => "not available: this kernel cannot filter system calls".into(),
    };
    let own = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Seccomp:"))
                .map(|v| v.trim().to_owned())
        });
    let own = match own.as_deref() {
        Some("0") => "not filtered",
        Some("1") => "strict mode",
        Some("2") => "filtered",
        _ => "unknown",
    };
    format!("{kernel}; agentd itself: {own}")
}
