//! Property tests: arbitrary messages survive both codecs; arbitrary bytes never panic the decoders.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: a panic is the failure report

use bytes::BytesMut;
use proptest::prelude::*;
use protocol::Encoding;
use protocol::codec::{decode, encode};
use protocol::control::*;
use protocol::event::*;
use protocol::frame::FrameDecoder;
use protocol::ids::*;
use protocol::session::*;
use protocol::verdict::*;
use protocol::worker::*;

fn session_id() -> impl Strategy<Value = SessionId> {
    "[A-Za-z0-9_-]{1,64}".prop_map(|s| SessionId::new(s).unwrap())
}

fn call_id() -> impl Strategy<Value = ToolCallId> {
    "[^\\p{Cc}]{1,40}".prop_map(|s| ToolCallId::new(s).unwrap())
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    (call_id(), any::<String>(), any::<String>()).prop_map(|(id, name, arguments)| ToolCall {
        id,
        name,
        arguments,
    })
}

fn verdict() -> impl Strategy<Value = Verdict> {
    prop_oneof![
        Just(Verdict::Allow),
        Just(Verdict::Ask),
        Just(Verdict::Deny)
    ]
}

fn decision() -> impl Strategy<Value = ApprovalDecision> {
    prop_oneof![
        Just(ApprovalDecision::AllowOnce),
        Just(ApprovalDecision::AllowAlways),
        Just(ApprovalDecision::Deny)
    ]
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (
            any::<String>(),
            proptest::option::of(any::<String>()),
            proptest::option::of(any::<u32>()),
            any::<bool>()
        )
            .prop_map(|(ws, model, max_steps, read_only)| Request::CreateSession(
                CreateSession {
                    workspace: ws.into(),
                    model,
                    approval: ApprovalMode::Never,
                    max_steps,
                    title: None,
                    read_only,
                }
            )),
        any::<bool>().prop_map(|all_users| Request::ListSessions(ListSessions { all_users })),
        (session_id(), proptest::option::of(any::<u64>())).prop_map(|(session, s)| {
            Request::AttachSession(AttachSession {
                session,
                after_seq: s.map(Seq),
            })
        }),
        session_id().prop_map(|session| Request::DetachSession(DetachSession { session })),
        session_id().prop_map(|session| Request::ResumeSession(ResumeSession { session })),
        session_id().prop_map(|session| Request::DeleteSession(DeleteSession { session })),
        (session_id(), any::<String>())
            .prop_map(|(session, text)| Request::SendMessage(SendMessage { session, text })),
        session_id().prop_map(|session| Request::Interrupt(Interrupt { session })),
        (session_id(), any::<u64>(), decision()).prop_map(|(session, a, decision)| {
            Request::ApprovalReply(ApprovalReply {
                session,
                approval: ApprovalId(a),
                decision,
            })
        }),
        Just(Request::Status),
        session_id().prop_map(|session| Request::Compact(Compact { session })),
        session_id().prop_map(|session| Request::SetApprovalMode(SetApprovalMode {
            session,
            mode: ApprovalMode::Always
        })),
        (session_id(), any::<String>())
            .prop_map(|(session, model)| Request::SetModel(SetModel { session, model })),
    ]
}

/// Any event: one of a session's own, or one of those wrapped as a subagent's.
fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => own_event(),
        1 => (call_id(), own_event()).prop_map(|(call_id, event)| Event::Subagent(SubagentEvent {
            call_id,
            event: Box::new(event)
        })),
    ]
}

fn own_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        any::<String>().prop_map(|text| Event::UserMessage(UserMessage { text })),
        any::<u64>().prop_map(|turn| Event::TurnStarted(TurnStarted { turn })),
        any::<String>().prop_map(|text| Event::AssistantTextDelta(AssistantTextDelta { text })),
        (
            any::<String>(),
            proptest::collection::vec(tool_call(), 0..4),
            proptest::collection::vec(any::<String>(), 0..2)
        )
            .prop_map(|(text, tool_calls, opaque)| Event::AssistantMessage(
                AssistantMessage {
                    text,
                    tool_calls,
                    opaque
                }
            )),
        (tool_call(), verdict(), any::<String>()).prop_map(|(call, verdict, reason)| {
            Event::ToolCallStarted(ToolCallStarted {
                call,
                verdict,
                reason,
            })
        }),
        (any::<u64>(), tool_call(), any::<String>()).prop_map(|(a, call, reason)| {
            Event::ApprovalRequested(ApprovalRequested {
                approval: ApprovalId(a),
                call,
                reason,
            })
        }),
        (any::<u64>(), decision()).prop_map(|(a, decision)| Event::ApprovalResolved(
            ApprovalResolved {
                approval: ApprovalId(a),
                decision,
                by: "user".into()
            }
        )),
        (call_id(), any::<String>())
            .prop_map(|(call_id, text)| Event::ToolOutputDelta(ToolOutputDelta { call_id, text })),
        (
            call_id(),
            any::<String>(),
            proptest::option::of(any::<i32>()),
            any::<bool>(),
            any::<u64>()
        )
            .prop_map(|(call_id, content, exit_code, truncated, duration_ms)| {
                Event::ToolCallFinished(ToolCallFinished {
                    call_id,
                    status: ToolStatus::Error,
                    content,
                    exit_code,
                    truncated,
                    duration_ms,
                })
            }),
        proptest::collection::vec(any::<String>(), 0..5).prop_map(|items| Event::TodoListChanged(
            TodoListChanged {
                items: items
                    .into_iter()
                    .map(|content| TodoItem {
                        active_form: String::new(),
                        content,
                        status: TodoStatus::Pending
                    })
                    .collect()
            }
        )),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<String>()).prop_map(
            |(a, b, c, summary)| Event::ContextCompacted(ContextCompacted {
                tokens_before: a,
                tokens_after: b,
                messages_summarised: c,
                summary
            })
        ),
        (
            any::<u64>(),
            any::<u64>(),
            proptest::option::of(any::<String>()),
            proptest::option::of((any::<String>(), proptest::option::of(any::<String>())))
        )
            .prop_map(|(i, o, message, changed)| {
                Event::TurnFinished(TurnFinished {
                    reason: FinishReason::TokenBudget,
                    usage: TokenUsage {
                        input_tokens: i,
                        output_tokens: o,
                        ..TokenUsage::default()
                    },
                    message,
                    changes: changed.map(|(path, incomplete)| WorkspaceChanges {
                        total: 7,
                        paths: vec![ChangedPath {
                            path,
                            change: PathChange::ModeChanged,
                            kind: PathKind::Symlink,
                        }],
                        incomplete,
                    }),
                })
            }),
        Just(Event::ApprovalModeChanged(ApprovalModeChanged {
            mode: ApprovalMode::Never
        })),
        any::<String>().prop_map(|model| Event::ModelChanged(ModelChanged { model })),
    ]
}

fn tool_request() -> impl Strategy<Value = ToolRequest> {
    prop_oneof![
        any::<String>().prop_map(|command| ToolRequest::Bash(BashRequest { command })),
        (
            any::<String>(),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>())
        )
            .prop_map(
                |(path, offset, limit)| ToolRequest::ReadFile(ReadFileRequest {
                    path,
                    offset,
                    limit
                })
            ),
        (any::<String>(), any::<String>())
            .prop_map(|(path, content)| ToolRequest::WriteFile(WriteFileRequest { path, content })),
        (
            any::<String>(),
            any::<String>(),
            any::<String>(),
            any::<bool>()
        )
            .prop_map(|(path, old, new, replace_all)| {
                ToolRequest::StrReplace(StrReplaceRequest {
                    path,
                    old,
                    new,
                    replace_all,
                })
            }),
        proptest::option::of(any::<String>())
            .prop_map(|path| ToolRequest::ListDir(ListDirRequest { path })),
        (any::<String>(), proptest::option::of(any::<String>()))
            .prop_map(|(pattern, path)| ToolRequest::Glob(GlobRequest { pattern, path })),
        (any::<String>(), any::<bool>()).prop_map(|(pattern, ignore_case)| ToolRequest::Grep(
            GrepRequest {
                pattern,
                path: None,
                glob: None,
                ignore_case,
                max_matches: None
            }
        )),
    ]
}

fn both<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    for enc in [Encoding::Bincode, Encoding::Json] {
        let bytes = encode(enc, value).unwrap();
        let back: T = decode(enc, &bytes).unwrap();
        assert_eq!(&back, value);
    }
}

proptest! {
    #[test]
    fn arbitrary_client_messages_round_trip(id in any::<u64>(), request in request()) {
        both(&ClientMessage { id: RequestId(id), request });
    }

    #[test]
    fn arbitrary_events_round_trip(session in session_id(), seq in any::<u64>(), event in event()) {
        both(&ServerMessage::Event(EventEnvelope { session, seq: Seq(seq), event }));
    }

    #[test]
    fn arbitrary_tool_requests_round_trip(req in tool_request(), timeout_ms in any::<Option<u64>>()) {
        both(&ToWorker::Run(RunTool { tool: req, timeout_ms }));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_decoders(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode::<ClientMessage>(Encoding::Bincode, &bytes);
        let _ = decode::<ClientMessage>(Encoding::Json, &bytes);
        let _ = decode::<ToWorker>(Encoding::Bincode, &bytes);
        let _ = decode::<FromWorker>(Encoding::Bincode, &bytes);
        let _ = protocol::handshake::parse_hello(&bytes);
        let mut buf = BytesMut::from(&bytes[..]);
        let decoder = FrameDecoder::new(256);
        while let Ok(Some(_)) = decoder.decode(&mut buf) {}
    }

    #[test]
    fn frames_split_anywhere_reassemble(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..6), cut in any::<prop::sample::Index>()) {
        let d = FrameDecoder::default();
        let mut wire = Vec::new();
        for p in &payloads { d.encode(p, &mut wire).unwrap(); }
        let at = cut.index(wire.len() + 1);
        let mut buf = BytesMut::from(&wire[..at]);
        let mut got = Vec::new();
        while let Some(f) = d.decode(&mut buf).unwrap() { got.push(f.to_vec()); }
        buf.extend_from_slice(&wire[at..]);
        while let Some(f) = d.decode(&mut buf).unwrap() { got.push(f.to_vec()); }
        prop_assert_eq!(got, payloads);
        prop_assert!(buf.is_empty());
    }
}
