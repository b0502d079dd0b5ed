//! Every JSON example in docs/protocol.md parses as the message it stands for, and every message
//! variant has an example there: the doc cannot drift from the code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use protocol::control::{ClientMessage, Request, ResponseBody, ServerMessage};
use protocol::event::Event;
use protocol::handshake::{HandshakeReply, Hello};
use protocol::worker::{FromWorker, ToWorker, ToolRequest};
use std::collections::BTreeSet;

fn json_blocks() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim()) {
            (None, "```json") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => block.push_str(line),
            (None, _) => {}
        }
    }
    blocks
}

#[derive(Default)]
struct Seen(BTreeSet<&'static str>);

impl Seen {
    fn check(&self, label: &str, all: &[&'static str]) {
        let missing: Vec<_> = all.iter().filter(|v| !self.0.contains(**v)).collect();
        assert!(
            missing.is_empty(),
            "docs/protocol.md has no example of {label} {missing:?}"
        );
    }
}

#[test]
fn every_example_parses_and_every_variant_has_one() {
    let blocks = json_blocks();
    assert!(blocks.len() > 30, "found only {} JSON blocks", blocks.len());
    let (mut requests, mut server, mut bodies, mut events, mut to, mut tools, mut from) = (
        Seen::default(),
        Seen::default(),
        Seen::default(),
        Seen::default(),
        Seen::default(),
        Seen::default(),
        Seen::default(),
    );
    for block in &blocks {
        if let Ok(m) = serde_json::from_str::<ClientMessage>(block) {
            requests.0.insert(m.request.variant_name());
        } else if let Ok(m) = serde_json::from_str::<ServerMessage>(block) {
            server.0.insert(m.variant_name());
            match m {
                ServerMessage::Response(r) => drop(bodies.0.insert(r.body.variant_name())),
                ServerMessage::Event(e) => drop(events.0.insert(e.event.variant_name())),
                ServerMessage::Error(_) => {}
            }
        } else if let Ok(m) = serde_json::from_str::<ToWorker>(block) {
            to.0.insert(m.variant_name());
            if let ToWorker::Run(run) = m {
                tools.0.insert(run.tool.variant_name());
            }
        } else if let Ok(m) = serde_json::from_str::<FromWorker>(block) {
            from.0.insert(m.variant_name());
        } else if serde_json::from_str::<Hello>(block).is_err()
            && serde_json::from_str::<HandshakeReply>(block).is_err()
        {
            panic!("docs/protocol.md example parses as no message:\n{block}");
        }
    }
    requests.check("request", Request::VARIANTS);
    server.check("server message", ServerMessage::VARIANTS);
    bodies.check("response body", ResponseBody::VARIANTS);
    events.check("event", Event::VARIANTS);
    to.check("message to a worker", ToWorker::VARIANTS);
    tools.check("tool request", ToolRequest::VARIANTS);
    from.check("message from a worker", FromWorker::VARIANTS);
}
