//! `tool-worker`: spawned by agentd with one end of a socketpair as its stdin; runs one tool call.

fn main() -> ! {
    std::process::exit(tool_worker::run(std::env::args().skip(1)))
}
