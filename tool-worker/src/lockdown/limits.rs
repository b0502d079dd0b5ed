//! Resource limits.

use nix::sys::resource::{Resource, setrlimit};
use protocol::worker::ResourceLimits;

/// Why a limit could not be set.
#[derive(Debug, thiserror::Error)]
#[error("setting {name}: {source}")]
pub struct LimitError {
    name: &'static str,
    #[source]
    source: nix::Error,
}

/// Sets CPU, address space, file size, open files, core dumps (none) and, for a non-root uid,
/// process count. `RLIMIT_NPROC` never binds uid 0: a root worker's processes are bounded by the
/// supervisor's pids cgroup instead.
pub fn apply(limits: &ResourceLimits, will_be_root: bool) -> Result<(), LimitError> {
    let set = |name, resource, value: u64| {
        setrlimit(resource, value, value).map_err(|source| LimitError { name, source })
    };
    set("RLIMIT_CPU", Resource::RLIMIT_CPU, limits.cpu_seconds)?;
    set("RLIMIT_AS", Resource::RLIMIT_AS, limits.memory_bytes)?;
    set(
        "RLIMIT_FSIZE",
        Resource::RLIMIT_FSIZE,
        limits.file_size_bytes,
    )?;
    set("RLIMIT_NOFILE", Resource::RLIMIT_NOFILE, limits.open_files)?;
    set("RLIMIT_CORE", Resource::RLIMIT_CORE, 0)?;
    if !will_be_root {
        set("RLIMIT_NPROC", Resource::RLIMIT_NPROC, limits.max_processes)?;
    }
    Ok(())
}
