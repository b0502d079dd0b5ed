//! Capabilities: every set emptied, so a root-owned worker is root in name only.

use caps::{CapSet, Capability};

/// Why capabilities could not be cleared.
#[derive(Debug, thiserror::Error)]
#[error("clearing the {set} capability set: {source}")]
pub struct CapsError {
    set: &'static str,
    #[source]
    source: caps::errors::CapsError,
}

/// Empties the bounding set. Needs CAP_SETPCAP, so it comes before the uid change, which
/// empties the permitted and effective sets of a process that leaves uid 0.
pub fn clear_bounding() -> Result<(), CapsError> {
    // Dropping a capability that is already out of the set is not an error, so no read first.
    for cap in caps::all() {
        caps::drop(None, CapSet::Bounding, cap).map_err(|source| CapsError {
            set: "bounding",
            source,
        })?;
    }
    Ok(())
}

/// Empties the bounding (if still possible), ambient, inheritable, effective and permitted sets.
pub fn clear_all() -> Result<(), CapsError> {
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false) {
        clear_bounding()?;
    }
    let steps: [(&str, CapSet); 4] = [
        ("ambient", CapSet::Ambient),
        ("inheritable", CapSet::Inheritable),
        ("effective", CapSet::Effective),
        ("permitted", CapSet::Permitted),
    ];
    for (set, which) in steps {
        caps::clear(None, which).map_err(|source| CapsError { set, source })?;
    }
    Ok(())
}

/// Whether every set is empty now.
pub fn all_clear() -> bool {
    [
        CapSet::Effective,
        CapSet::Permitted,
        CapSet::Inheritable,
        CapSet::Ambient,
    ]
    .into_iter()
    .all(|set| caps::read(None, set).map(|s| s.is_empty()).unwrap_or(false))
        && caps::all()
            .into_iter()
            .all(|c: Capability| !caps::has_cap(None, CapSet::Bounding, c).unwrap_or(true))
}
