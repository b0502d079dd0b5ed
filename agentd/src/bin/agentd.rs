//! `agentd`: the supervisor daemon.

fn main() {
    eprintln!("agentd: nothing to run yet");
    std::process::exit(2);
}
