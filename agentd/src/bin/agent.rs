//! `agent`: the client.

fn main() {
    eprintln!("agent: nothing to run yet");
    std::process::exit(2);
}
