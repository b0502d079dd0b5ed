//! The supervisor: sessions, the agent loop, providers, the policy engine and the workers it spawns.
