//! `[aggregate]`: the bounds over all calls of one session, all sessions of one user, and all
//! users together ([`crate::worker::aggregate`]), each key over the machine's default. A key
//! set above the level over it is an error; a default above it takes that level's bound.

use super::ConfigError;
use crate::worker::aggregate::{Bounds, Machine};
use serde::Deserialize;
use toml::Spanned;

/// A memory size: bytes, a string with a unit (`"512M"`, `"2G"`, `"1T"`; powers of 1024), or a
/// share of the machine's RAM (`"50%"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// Bytes.
    Bytes(u64),
    /// With a unit, or a percentage.
    Text(String),
}

impl Size {
    /// In bytes on a machine with `ram` bytes of RAM.
    fn bytes(&self, ram: u64) -> Result<u64, String> {
        let text = match self {
            Size::Bytes(b) => return Ok(*b),
            Size::Text(t) => t.trim(),
        };
        let bad = || format!("{text:?} is not a size (bytes, \"512M\", \"2G\" or \"50%\")");
        if let Some(share) = text.strip_suffix('%') {
            let share: f64 = share.trim().parse().map_err(|_| bad())?;
            if !(share > 0.0 && share <= 100.0) {
                return Err(format!(
                    "{text:?}: a share of the RAM is above 0% and at most 100%"
                ));
            }
            return Ok((ram as f64 * share / 100.0) as u64);
        }
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number.parse().map_err(|_| bad())?;
        let shift = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            "T" | "TB" | "TIB" => 40,
            _ => return Err(bad()),
        };
        number
            .checked_mul(1 << shift)
            .ok_or_else(|| format!("{text:?} is too large"))
    }
}

/// `[aggregate]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregateSection {
    /// Memory of all calls of one session together (default: half the RAM).
    pub session_memory: Option<Spanned<Size>>,
    /// Memory of all sessions of one user together (default: half the RAM).
    pub user_memory: Option<Spanned<Size>>,
    /// Memory of all users' sessions together (default: three quarters of the RAM).
    pub total_memory: Option<Spanned<Size>>,
    /// Processes and threads of one session (default: an eighth of the kernel's maximum).
    pub session_max_processes: Option<Spanned<u64>>,
    /// Processes and threads of one user's sessions (default: a quarter of the maximum).
    pub user_max_processes: Option<Spanned<u64>>,
    /// Processes and threads of all users' sessions (default: half the maximum).
    pub total_max_processes: Option<Spanned<u64>>,
    /// CPU time of one session, in CPUs (default: not bounded).
    pub session_cpus: Option<Spanned<f64>>,
    /// CPU time of one user's sessions, in CPUs (default: not bounded).
    pub user_cpus: Option<Spanned<f64>>,
    /// CPU time of all users' sessions, in CPUs (default: not bounded).
    pub total_cpus: Option<Spanned<f64>>,
}

/// The least memory a bound may have: below it a call's worker cannot start.
const MIN_MEMORY: u64 = 64 << 20;
/// The fewest processes: a shell and its pipeline.
const MIN_PROCESSES: u64 = 16;

impl AggregateSection {
    /// The bounds for `machine`, these keys over its defaults, nested; an invalid value, or a
    /// key set above the level over it (a session's above its user's, a user's above the
    /// total), is an error naming the key, the file and the line.
    pub fn bounds(
        section: Option<&Self>,
        machine: &Machine,
        text: &str,
        path: &str,
    ) -> Result<Bounds, ConfigError> {
        let mut b = Bounds::defaults(machine);
        let Some(s) = section else {
            return Ok(b);
        };
        let invalid = |span: std::ops::Range<usize>, message: String| {
            let (line, column) = policy::rules::line_col(text, span.start);
            ConfigError::Invalid {
                path: path.into(),
                line,
                column,
                message: format!("aggregate.{message}"),
            }
        };
        let memory = |key: &str, v: &Spanned<Size>, into: &mut u64| {
            let bytes = v
                .get_ref()
                .bytes(machine.memory_bytes)
                .map_err(|m| invalid(v.span(), format!("{key}: {m}")))?;
            if bytes < MIN_MEMORY {
                return Err(invalid(
                    v.span(),
                    format!("{key}: {bytes} bytes is less than the least, 64 MiB"),
                ));
            }
            *into = bytes;
            Ok(())
        };
        let processes = |key: &str, v: &Spanned<u64>, into: &mut u64| {
            if *v.get_ref() < MIN_PROCESSES {
                return Err(invalid(
                    v.span(),
                    format!("{key}: at least {MIN_PROCESSES} processes"),
                ));
            }
            *into = *v.get_ref();
            Ok(())
        };
        let cpus = |key: &str, v: &Spanned<f64>, into: &mut Option<f64>| {
            let c = *v.get_ref();
            if !(c.is_finite() && c >= 0.01) {
                return Err(invalid(v.span(), format!("{key}: at least 0.01 CPUs")));
            }
            *into = Some(c);
            Ok(())
        };
        for (level, [memory_key, processes_key, cpus_key], keys) in [
            (
                &mut b.session,
                ["session_memory", "session_max_processes", "session_cpus"],
                (&s.session_memory, &s.session_max_processes, &s.session_cpus),
            ),
            (
                &mut b.user,
                ["user_memory", "user_max_processes", "user_cpus"],
                (&s.user_memory, &s.user_max_processes, &s.user_cpus),
            ),
            (
                &mut b.total,
                ["total_memory", "total_max_processes", "total_cpus"],
                (&s.total_memory, &s.total_max_processes, &s.total_cpus),
            ),
        ] {
            if let Some(v) = keys.0 {
                memory(memory_key, v, &mut level.memory_bytes)?;
            }
            if let Some(v) = keys.1 {
                processes(processes_key, v, &mut level.max_processes)?;
            }
            if let Some(v) = keys.2 {
                cpus(cpus_key, v, &mut level.cpus)?;
            }
        }
        // A key above the level over it would bound nothing (and v1's cpu refuses it); a
        // default above it takes that level's bound.
        let user = b.user.within(&b.total);
        let over = [
            (
                "user_memory",
                s.user_memory.as_ref().map(Spanned::span),
                b.user.memory_bytes > user.memory_bytes,
                "the total",
            ),
            (
                "user_max_processes",
                s.user_max_processes.as_ref().map(Spanned::span),
                b.user.max_processes > user.max_processes,
                "the total",
            ),
            (
                "user_cpus",
                s.user_cpus.as_ref().map(Spanned::span),
                b.user.cpus != user.cpus,
                "the total",
            ),
            (
                "session_memory",
                s.session_memory.as_ref().map(Spanned::span),
                b.session.memory_bytes > user.memory_bytes,
                "the user's bound",
            ),
            (
                "session_max_processes",
                s.session_max_processes.as_ref().map(Spanned::span),
                b.session.max_processes > user.max_processes,
                "the user's bound",
            ),
            (
                "session_cpus",
                s.session_cpus.as_ref().map(Spanned::span),
                matches!((b.session.cpus, user.cpus), (Some(a), Some(u)) if a > u),
                "the user's bound",
            ),
        ];
        for (key, span, above, what) in over {
            if let (Some(span), true) = (span, above) {
                return Err(invalid(span, format!("{key}: more than {what}")));
            }
        }
        Ok(b.nested())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: Machine = Machine {
        memory_bytes: 24 << 30,
        max_processes: 32768,
        cpus: 2,
    };

    fn bounds(text: &str) -> Result<Bounds, String> {
        let c = super::super::parse(text, "c.toml").map_err(|e| e.to_string())?;
        AggregateSection::bounds(c.aggregate.as_ref(), &MACHINE, text, "c.toml")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn keys_set_the_bounds_over_the_machine_defaults() {
        let b = bounds("[aggregate]\nsession_memory = \"2G\"\nuser_memory = \"50%\"\nsession_max_processes = 100\nsession_cpus = 1.5\nuser_cpus = 2\n").unwrap();
        assert_eq!(b.session.memory_bytes, 2 << 30);
        assert_eq!(b.user.memory_bytes, 12 << 30);
        assert_eq!(b.total.memory_bytes, 18 << 30, "the default");
        assert_eq!(b.session.max_processes, 100);
        assert_eq!(b.user.max_processes, 8192, "the default");
        assert_eq!((b.session.cpus, b.user.cpus), (Some(1.5), Some(2.0)));
        assert_eq!(bounds("").unwrap(), Bounds::defaults(&MACHINE));
        // The defaults below a total set low take the total's bound.
        let b = bounds(
            "[aggregate]\ntotal_memory = \"1G\"\ntotal_max_processes = 300\ntotal_cpus = 1\n",
        )
        .unwrap();
        assert_eq!(
            (
                b.total.memory_bytes,
                b.user.memory_bytes,
                b.session.memory_bytes
            ),
            (1 << 30, 1 << 30, 1 << 30)
        );
        assert_eq!(
            (
                b.total.max_processes,
                b.user.max_processes,
                b.session.max_processes
            ),
            (300, 300, 300)
        );
        assert_eq!((b.user.cpus, b.session.cpus), (Some(1.0), Some(1.0)));
        assert_eq!(
            bounds("[aggregate]\nsession_memory = 1073741824\n")
                .unwrap()
                .session
                .memory_bytes,
            1 << 30
        );
    }

    #[test]
    fn bad_values_and_unknown_keys_are_named_with_their_line() {
        for (text, key) in [
            (
                "[aggregate]\n\nsession_memory = \"2 pints\"\n",
                "session_memory",
            ),
            ("[aggregate]\n\nsession_memory = \"1M\"\n", "session_memory"),
            ("[aggregate]\n\nuser_memory = \"150%\"\n", "user_memory"),
            (
                "[aggregate]\n\nsession_max_processes = 3\n",
                "session_max_processes",
            ),
            ("[aggregate]\n\nsession_cpus = 0.0\n", "session_cpus"),
            (
                "[aggregate]\n\nsession_memory = \"20G\"\n",
                "session_memory",
            ),
            (
                "[aggregate]\nuser_cpus = 1\nsession_cpus = 2\n",
                "session_cpus",
            ),
            ("[aggregate]\n\nsession_memroy = \"1G\"\n", "session_memroy"),
            (
                "[aggregate]\ntotal_memory = \"2G\"\nuser_memory = \"3G\"\n",
                "user_memory",
            ),
            (
                "[aggregate]\ntotal_max_processes = 100\nuser_max_processes = 200\n",
                "user_max_processes",
            ),
            (
                "[aggregate]\ntotal_cpus = 1\nuser_cpus = 1.5\n",
                "user_cpus",
            ),
            (
                "[aggregate]\ntotal_memory = \"2G\"\nsession_memory = \"3G\"\n",
                "session_memory",
            ),
            ("[aggregate]\n\ntotal_memory = \"1M\"\n", "total_memory"),
        ] {
            let err = bounds(text).unwrap_err();
            assert!(err.contains(key), "{text}: {err}");
            assert!(err.starts_with("c.toml:3:"), "{text}: {err}");
        }
    }
}
