//! The `tool-worker` binary; spawned by agentd with one end of a socketpair.

fn main() {
    eprintln!("tool-worker: not yet implemented");
    std::process::exit(2);
}
