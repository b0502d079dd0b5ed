//! Every message variant survives both codecs unchanged, and the samples cover every variant.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

mod common;

use protocol::Encoding;
use protocol::codec::{decode, encode};
use protocol::control::{ClientMessage, Request, ResponseBody, ServerMessage};
use protocol::event::Event;
use protocol::ids::RequestId;
use protocol::worker::{FromWorker, ToWorker, ToolRequest};
use serde::{Serialize, de::DeserializeOwned};
use std::collections::BTreeSet;
use std::fmt::Debug;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) {
    for enc in [Encoding::Bincode, Encoding::Json] {
        let bytes = encode(enc, value).unwrap_or_else(|e| panic!("{enc} encode of {value:?}: {e}"));
        let back: T =
            decode(enc, &bytes).unwrap_or_else(|e| panic!("{enc} decode of {value:?}: {e}"));
        assert_eq!(&back, value, "{enc} round trip");
    }
}

fn covers(names: impl IntoIterator<Item = &'static str>, all: &[&str]) {
    let seen: BTreeSet<&str> = names.into_iter().collect();
    let all: BTreeSet<&str> = all.iter().copied().collect();
    assert_eq!(
        seen, all,
        "the samples must hold one value of every variant"
    );
}

#[test]
fn every_request_round_trips_in_both_codecs() {
    let requests = common::requests();
    covers(
        requests.iter().map(Request::variant_name),
        Request::VARIANTS,
    );
    for (i, request) in requests.into_iter().enumerate() {
        round_trip(&ClientMessage {
            id: RequestId(i as u64),
            request,
        });
    }
}

#[test]
fn every_event_round_trips_in_both_codecs() {
    let events = common::events();
    covers(events.iter().map(Event::variant_name), Event::VARIANTS);
    for event in events {
        round_trip(&ServerMessage::Event(protocol::event::EventEnvelope {
            session: common::sid(),
            seq: protocol::ids::Seq(9),
            event,
        }));
    }
}

#[test]
fn every_response_and_server_message_round_trips_in_both_codecs() {
    let bodies = common::response_bodies();
    covers(
        bodies.iter().map(ResponseBody::variant_name),
        ResponseBody::VARIANTS,
    );
    for body in bodies {
        round_trip(&ServerMessage::Response(protocol::control::Response {
            id: RequestId(7),
            body,
        }));
    }
    let messages = common::server_messages();
    covers(
        messages.iter().map(ServerMessage::variant_name),
        ServerMessage::VARIANTS,
    );
    messages.iter().for_each(round_trip);
}

#[test]
fn every_worker_message_round_trips_in_both_codecs() {
    let to = common::to_worker();
    covers(to.iter().map(ToWorker::variant_name), ToWorker::VARIANTS);
    to.iter().for_each(round_trip);
    let tools = common::tool_requests();
    covers(
        tools.iter().map(ToolRequest::variant_name),
        ToolRequest::VARIANTS,
    );
    tools
        .into_iter()
        .map(|tool| {
            ToWorker::Run(protocol::worker::RunTool {
                tool,
                timeout_ms: None,
            })
        })
        .for_each(|m| round_trip(&m));
    let from = common::from_worker();
    covers(
        from.iter().map(FromWorker::variant_name),
        FromWorker::VARIANTS,
    );
    from.iter().for_each(round_trip);
}

#[test]
fn json_is_internally_tagged_with_snake_case_names() {
    let json = serde_json::to_value(&common::requests()[0]).unwrap();
    assert_eq!(json["type"], "create_session");
    assert_eq!(json["approval"], "on_risk");
    assert_eq!(
        serde_json::to_value(&Request::Status).unwrap(),
        serde_json::json!({"type": "status"})
    );
    let ev = serde_json::to_value(&common::events()[4]).unwrap();
    assert_eq!(ev["type"], "tool_call_started");
    assert_eq!(ev["verdict"], "allow");
}

#[test]
fn bincode_is_compact() {
    let msg = ClientMessage {
        id: RequestId(1),
        request: Request::Status,
    };
    let bin = encode(Encoding::Bincode, &msg).unwrap();
    let json = encode(Encoding::Json, &msg).unwrap();
    assert!(
        bin.len() < 4,
        "status request is a request id and a variant index: {bin:?}"
    );
    assert!(bin.len() < json.len());
}
