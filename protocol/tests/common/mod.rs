//! One sample value of every message variant, shared by the round-trip and docs tests.
#![allow(dead_code, clippy::unwrap_used)]

use protocol::control::*;
use protocol::event::*;
use protocol::ids::*;
use protocol::session::*;
use protocol::verdict::*;
use protocol::worker::*;

pub fn sid() -> SessionId {
    SessionId::new("s-20261129-0001").unwrap()
}

pub fn call() -> ToolCall {
    ToolCall {
        id: ToolCallId::new("call_1").unwrap(),
        name: "bash".into(),
        arguments: r#"{"command":"ls"}"#.into(),
    }
}

pub fn info() -> SessionInfo {
    SessionInfo {
        id: sid(),
        owner_uid: 1000,
        workspace: "/home/ana/project".into(),
        model: "gpt-4.1".into(),
        state: SessionState::Idle,
        created_unix_ms: 1_796_000_000_000,
        last_seq: Seq(12),
        title: Some("fix the parser".into()),
        approval: ApprovalMode::OnRisk,
        last_activity_unix_ms: 1_796_000_060_000,
    }
}

pub fn requests() -> Vec<Request> {
    vec![
        Request::CreateSession(CreateSession {
            workspace: "/home/ana/project".into(),
            model: None,
            approval: ApprovalMode::OnRisk,
            max_steps: Some(50),
            title: None,
            read_only: false,
        }),
        Request::ListSessions(ListSessions { all_users: false }),
        Request::AttachSession(AttachSession {
            session: sid(),
            after_seq: Some(Seq(10)),
        }),
        Request::DetachSession(DetachSession { session: sid() }),
        Request::ResumeSession(ResumeSession { session: sid() }),
        Request::DeleteSession(DeleteSession { session: sid() }),
        Request::SendMessage(SendMessage {
            session: sid(),
            text: "make the tests pass".into(),
        }),
        Request::Interrupt(Interrupt { session: sid() }),
        Request::ApprovalReply(ApprovalReply {
            session: sid(),
            approval: ApprovalId(3),
            decision: ApprovalDecision::AllowOnce,
        }),
        Request::Status,
        Request::Compact(Compact { session: sid() }),
        Request::SetApprovalMode(SetApprovalMode {
            session: sid(),
            mode: ApprovalMode::Never,
        }),
        Request::SetModel(SetModel {
            session: sid(),
            model: "gpt-4.1-mini".into(),
        }),
    ]
}

pub fn events() -> Vec<Event> {
    vec![
        Event::UserMessage(UserMessage { text: "hi".into() }),
        Event::TurnStarted(TurnStarted { turn: 1 }),
        Event::AssistantTextDelta(AssistantTextDelta {
            text: "Let me".into(),
        }),
        Event::AssistantMessage(AssistantMessage {
            text: "Let me look.".into(),
            tool_calls: vec![call()],
            opaque: vec![],
        }),
        Event::ToolCallStarted(ToolCallStarted {
            call: call(),
            verdict: Verdict::Allow,
            reason: "rule bash[3] 'ls *' allows `ls`".into(),
        }),
        Event::ApprovalRequested(ApprovalRequested {
            approval: ApprovalId(3),
            call: call(),
            reason: "default: ask".into(),
        }),
        Event::ApprovalResolved(ApprovalResolved {
            approval: ApprovalId(3),
            decision: ApprovalDecision::Deny,
            by: "user".into(),
        }),
        Event::ToolOutputDelta(ToolOutputDelta {
            call_id: call().id,
            text: "Cargo.toml\n".into(),
        }),
        Event::ToolCallFinished(ToolCallFinished {
            call_id: call().id,
            status: ToolStatus::Ok,
            content: "Cargo.toml\nsrc\n".into(),
            exit_code: Some(0),
            truncated: false,
            duration_ms: 4,
        }),
        Event::TodoListChanged(TodoListChanged {
            items: vec![TodoItem {
                active_form: String::new(),
                content: "run tests".into(),
                status: TodoStatus::InProgress,
            }],
        }),
        Event::ContextCompacted(ContextCompacted {
            tokens_before: 120_000,
            tokens_after: 30_000,
            messages_summarised: 40,
            summary: "Goal: fix the parser. …".into(),
        }),
        Event::TurnFinished(TurnFinished {
            reason: FinishReason::Done,
            usage: TokenUsage {
                input_tokens: 1200,
                output_tokens: 80,
                ..TokenUsage::default()
            },
            message: None,
            changes: Some(WorkspaceChanges {
                total: 2,
                paths: vec![
                    ChangedPath {
                        path: "conftest.py".into(),
                        change: PathChange::Modified,
                        kind: PathKind::File,
                    },
                    ChangedPath {
                        path: "build/out.o".into(),
                        change: PathChange::Created,
                        kind: PathKind::File,
                    },
                ],
                incomplete: None,
            }),
        }),
        Event::Subagent(SubagentEvent {
            call_id: call().id,
            event: Box::new(Event::TurnStarted(TurnStarted { turn: 1 })),
        }),
        Event::ApprovalModeChanged(ApprovalModeChanged {
            mode: ApprovalMode::Never,
        }),
        Event::ModelChanged(ModelChanged {
            model: "gpt-4.1-mini".into(),
        }),
    ]
}

pub fn error() -> ErrorFrame {
    ErrorFrame::new(ErrorCode::NotFound, "no session s-1")
}

pub fn response_bodies() -> Vec<ResponseBody> {
    vec![
        ResponseBody::Ok,
        ResponseBody::SessionCreated(info()),
        ResponseBody::Sessions(SessionList {
            sessions: vec![info()],
        }),
        ResponseBody::Attached(Attached {
            session: info(),
            replaying: 2,
        }),
        ResponseBody::Status(StatusInfo {
            version: "0.1.0".into(),
            protocol: 1,
            uptime_ms: 5000,
            sessions: 1,
            landlock_abi: Some(7),
            containment: "cgroup v2 (unified)".into(),
            workers: 2,
            seccomp: "filters available (kill_process kill_thread trap errno user_notif trace log allow); agentd itself: not filtered".into(),
        }),
        ResponseBody::Error(error()),
    ]
}

pub fn server_messages() -> Vec<ServerMessage> {
    vec![
        ServerMessage::Response(Response {
            id: RequestId(1),
            body: ResponseBody::Ok,
        }),
        ServerMessage::Event(EventEnvelope {
            session: sid(),
            seq: Seq(1),
            event: events().remove(1),
        }),
        ServerMessage::Error(ErrorFrame::new(
            ErrorCode::FrameTooLarge,
            "frame of 20000000 bytes exceeds the maximum",
        )),
    ]
}

pub fn lockdown() -> LockdownReport {
    LockdownReport {
        landlock_abi: Some(7),
        landlock: LandlockStatus::FullyEnforced,
        seccomp: true,
        no_new_privs: true,
        capabilities_cleared: true,
        containment: "pid namespace + cgroup v2".into(),
        mount_namespace: true,
        ipc_namespace: true,
        protected: vec!["/home/ana/project/.git/hooks".into()],
        protected_ids: vec![(2049, 393_221)],
        uid: 1000,
        gid: 1000,
        warnings: vec![],
    }
}

pub fn spec() -> SandboxSpec {
    SandboxSpec {
        workspace: "/home/ana/project".into(),
        tmp_dir: "/run/agentd/tmp/call-1".into(),
        profile: SandboxProfile::WorkspaceWrite,
        network: false,
        read_paths: vec!["/opt/toolchain".into()],
        write_paths: vec![],
        limits: ResourceLimits::default(),
        run_as: Some(RunAs {
            uid: 1000,
            gid: 1000,
            groups: vec![1000],
        }),
        env: vec![EnvVar {
            name: "PATH".into(),
            value: "/usr/bin:/bin".into(),
        }],
        require_landlock: true,
        protected_paths: vec![".git/hooks".into(), ".git/modules/*/config".into()],
        workspace_identity: Some((2049, 1234567)),
        repositories: vec!["/home/u/proj/vendor/lib".into()],
        hidden_inside: vec!["/home/ana/.ssh".into()],
    }
}

pub fn tool_requests() -> Vec<ToolRequest> {
    vec![
        ToolRequest::Bash(BashRequest {
            command: "cargo test".into(),
        }),
        ToolRequest::ReadFile(ReadFileRequest {
            path: "src/lib.rs".into(),
            offset: Some(1),
            limit: Some(200),
        }),
        ToolRequest::WriteFile(WriteFileRequest {
            path: "notes.md".into(),
            content: "# notes\n".into(),
        }),
        ToolRequest::StrReplace(StrReplaceRequest {
            path: "src/lib.rs".into(),
            old: "a - b".into(),
            new: "a + b".into(),
            replace_all: false,
        }),
        ToolRequest::ListDir(ListDirRequest { path: None }),
        ToolRequest::Glob(GlobRequest {
            pattern: "src/**/*.rs".into(),
            path: None,
        }),
        ToolRequest::Grep(GrepRequest {
            pattern: "fn main".into(),
            path: Some("src".into()),
            glob: None,
            ignore_case: false,
            max_matches: Some(100),
        }),
    ]
}

pub fn to_worker() -> Vec<ToWorker> {
    vec![
        ToWorker::Spec(spec()),
        ToWorker::Run(RunTool {
            tool: tool_requests().remove(0),
            timeout_ms: Some(30_000),
        }),
    ]
}

pub fn from_worker() -> Vec<FromWorker> {
    vec![
        FromWorker::Ready(lockdown()),
        FromWorker::Output(OutputChunk {
            text: "running 3 tests\n".into(),
        }),
        FromWorker::Result(ToolResult {
            content: "test result: ok. 3 passed".into(),
            is_error: false,
            exit_code: Some(0),
            timed_out: false,
            truncated: false,
            bytes_seen: 25,
            duration_ms: 812,
            lockdown: lockdown(),
        }),
        FromWorker::Failed(WorkerFailure {
            step: WorkerStep::Landlock,
            message: "landlock is not supported by this kernel".into(),
        }),
    ]
}
