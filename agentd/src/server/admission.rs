//! Who is let in: the connection limits, counted per uid.
//!
//! Each uid's first [`Limits::reserved_per_uid`] connections are its own: they are admitted
//! whatever the others hold, and do not count against [`Limits::max_connections`], which bounds
//! only the connections beyond them (the shared pool). With one global count, four users holding
//! 64 idle connections each took all 256 slots and shut everyone else out, root included; now a
//! user who holds few connections always gets in, and the most connections open at once is
//! `max_connections` plus the reserve of each uid that may reach the socket (the `agentd` group's
//! members and root, in system mode).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The connection limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections beyond each uid's reserved ones, all uids together.
    pub max_connections: usize,
    /// Connections one uid may have, reserved ones included.
    pub max_per_uid: usize,
    /// Connections each uid gets whatever the others hold (at most `max_per_uid`).
    pub reserved_per_uid: usize,
}

/// Which limit a client met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The shared pool is full, and the uid holds its reserve already.
    All,
    /// The uid holds as many as one uid may.
    Uid(u32),
}

/// The counts, and the pure rule over them.
#[derive(Debug, Default)]
struct Counts {
    /// Connections open per uid (a uid with none is absent).
    per_uid: HashMap<u32, usize>,
    /// Connections beyond their uid's reserve: what `max_connections` bounds.
    shared: usize,
}

impl Counts {
    /// Counts one more connection of `uid`, or says which limit it meets.
    fn admit(&mut self, uid: u32, limits: &Limits) -> Result<(), Refused> {
        let held = self.per_uid.get(&uid).copied().unwrap_or(0);
        if held >= limits.max_per_uid {
            return Err(Refused::Uid(uid));
        }
        if held >= limits.reserved_per_uid.min(limits.max_per_uid) {
            if self.shared >= limits.max_connections {
                return Err(Refused::All);
            }
            self.shared += 1;
        }
        self.per_uid.insert(uid, held + 1);
        Ok(())
    }

    /// Counts one connection of `uid` fewer: a shared one while the uid holds more than its
    /// reserve (which of its connections closes does not matter, only how many it holds).
    fn release(&mut self, uid: u32, limits: &Limits) {
        let held = self.per_uid.get(&uid).copied().unwrap_or(0);
        if held == 0 {
            return;
        }
        if held > limits.reserved_per_uid.min(limits.max_per_uid) {
            self.shared = self.shared.saturating_sub(1);
        }
        if held == 1 {
            self.per_uid.remove(&uid);
        } else {
            self.per_uid.insert(uid, held - 1);
        }
    }

    fn open(&self) -> usize {
        self.per_uid.values().sum()
    }
}

/// The daemon's connection counts.
#[derive(Debug)]
pub struct Admission {
    limits: Limits,
    /// Behind a lock: admitting reads and changes two counts at once.
    counts: Mutex<Counts>,
    /// The connections open, for the shutdown to wait until none is.
    open: watch::Sender<usize>,
}

/// One admitted connection; its count is given back when dropped.
#[derive(Debug)]
pub struct Ticket {
    uid: u32,
    admission: Arc<Admission>,
}

impl Admission {
    /// No connection yet, under `limits`.
    pub fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            counts: Mutex::default(),
            open: watch::Sender::new(0),
        })
    }

    /// Admits a connection of `uid`, or says which limit it meets.
    pub fn admit(self: &Arc<Self>, uid: u32) -> Result<Ticket, Refused> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.admit(uid, &self.limits)?;
        self.open.send_replace(counts.open());
        Ok(Ticket {
            uid,
            admission: Arc::clone(self),
        })
    }

    /// Returns once no connection is open.
    pub async fn all_closed(&self) {
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|n| *n == 0).await;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let admission = &self.admission;
        let mut counts = admission.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.release(self.uid, &admission.limits);
        admission.open.send_replace(counts.open());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_connections: 3,
        max_per_uid: 5,
        reserved_per_uid: 2,
    };

    #[test]
    fn a_uid_below_its_reserve_gets_in_when_the_pool_is_full() {
        let admission = Admission::new(LIMITS);
        // uid 1000 takes its reserve (2) and the whole pool (3).
        let held: Vec<Ticket> = (0..5).map(|_| admission.admit(1000).unwrap()).collect();
        assert_eq!(admission.admit(1000).unwrap_err(), Refused::Uid(1000));
        // uid 1001 takes the reserve: the pool is full, its reserve is not.
        let theirs: Vec<Ticket> = (0..2).map(|_| admission.admit(1001).unwrap()).collect();
        assert_eq!(admission.admit(1001).unwrap_err(), Refused::All);
        // Root too.
        let root = admission.admit(0).unwrap();
        // One of 1000's closes: a shared slot is free, whoever takes it.
        drop(held.into_iter().next());
        let more = admission.admit(1001).unwrap();
        assert_eq!(
            admission.admit(0).map(drop),
            Ok(()),
            "root's second is reserved"
        );
        assert_eq!(admission.admit(1002).map(drop), Ok(()));
        drop((theirs, root, more));
    }

    #[test]
    fn closing_gives_back_the_shared_slots_first_and_the_counts_go_to_zero() {
        let admission = Admission::new(LIMITS);
        let mine: Vec<Ticket> = (0..5).map(|_| admission.admit(7).unwrap()).collect();
        let mut mine = mine.into_iter();
        // Any three of uid 7's five closing give the pool's three back.
        drop(mine.next());
        drop(mine.next());
        drop(mine.next());
        let others: Vec<Ticket> = (0..3).map(|u| admission.admit(100 + u).unwrap()).collect();
        // uid 100: its second is reserved, its three more fill the pool again.
        let pool: Vec<Ticket> = (0..4).map(|_| admission.admit(100).unwrap()).collect();
        let reserved = admission.admit(101).unwrap();
        assert_eq!(admission.admit(101).unwrap_err(), Refused::All);
        drop((mine, others, pool, reserved));
        assert_eq!(*admission.open.borrow(), 0);
        let counts = admission.counts.lock().unwrap();
        assert_eq!((counts.shared, counts.per_uid.len()), (0, 0));
    }

    #[test]
    fn no_reserve_is_one_global_count() {
        let admission = Admission::new(Limits {
            reserved_per_uid: 0,
            ..LIMITS
        });
        let held: Vec<Ticket> = (0..3).map(|u| admission.admit(u).unwrap()).collect();
        assert_eq!(admission.admit(9).unwrap_err(), Refused::All);
        drop(held);
    }
}
