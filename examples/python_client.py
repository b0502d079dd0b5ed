#!/usr/bin/env python3
"""A client of agentd's control socket in Python, standard library only.

    python3 examples/python_client.py SOCKET PROMPT [--workspace DIR]

Connects to SOCKET (agentd serve's socket), shakes hands in the JSON encoding, creates a
session working in DIR (default: the current directory), attaches to it, sends PROMPT, and
prints every event of the session as one JSON line on stdout. Approval requests are put to
the user on the terminal; with no terminal on stdin they are denied. Ctrl-C interrupts the
turn. Exit status: 0 when the turn finished with `done`, 1 when it ended otherwise, 2 when
the daemon refused (the handshake or a request) or went away.

The wire format is docs/protocol.md: every frame is a 4-byte big-endian length, then that
many bytes of payload; the first frame is the JSON hello.
"""

import argparse
import json
import os
import signal
import socket
import struct
import sys


class Refused(Exception):
    """The daemon refused the handshake or a request, or closed the connection."""


class Connection:
    """One connection: frames in and out, request ids, and what is waiting for an answer."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.next_id = 1
        # Requests sent whose response has not come yet: id -> what it was.
        self.waiting = {}

    def send(self, message):
        payload = json.dumps(message).encode()
        self.sock.sendall(struct.pack(">I", len(payload)) + payload)

    def _read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise Refused("agentd closed the connection")
            data += chunk
        return data

    def receive(self):
        (length,) = struct.unpack(">I", self._read_exact(4))
        return json.loads(self._read_exact(length))

    def handshake(self):
        self.send({"hello": {"protocol": 1, "encoding": "json"}})
        reply = self.receive()
        if "welcome" not in reply:
            raise Refused("handshake refused: %s" % json.dumps(reply.get("error", reply)))
        return reply["welcome"]

    def request(self, request):
        """Sends `request` without waiting; its response comes among the events."""
        rid = self.next_id
        self.next_id += 1
        self.waiting[rid] = request["type"]
        self.send({"id": rid, "request": request})
        return rid

    def call(self, request, events):
        """Sends `request` and returns its response body; events that come first go to
        `events` (a list)."""
        rid = self.request(request)
        while True:
            message = self.receive()
            if message.get("type") == "response" and message.get("id") == rid:
                del self.waiting[rid]
                body = message["body"]
                if body.get("type") == "error":
                    raise Refused("%s: %s (%s)" % (request["type"], body["message"], body["code"]))
                return body
            events.append(message)


def ask_terminal(event):
    """The user's answer to an approval request, from the terminal."""
    call = event["call"]
    sys.stderr.write(
        "\n? %s %s\n  needs approval: %s\n  [y] allow once  [a] allow always  [N] deny: "
        % (call["name"], call["arguments"], event["reason"])
    )
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer in ("y", "yes"):
        return "allow_once"
    if answer in ("a", "always"):
        return "allow_always"
    return "deny"


def handle(conn, session, message, interactive):
    """Prints an event (answering approval requests) or reports a late response. Returns the
    turn's finish reason when this frame ended the turn."""
    kind = message.get("type")
    if kind == "error":
        raise Refused("%s: %s" % (message["code"], message["message"]))
    if kind == "response":
        what = conn.waiting.pop(message.get("id"), "request")
        body = message["body"]
        if body.get("type") == "error":
            sys.stderr.write("%s refused: %s (%s)\n" % (what, body["message"], body["code"]))
        return None
    print(json.dumps(message), flush=True)
    event = message["event"]
    if event["type"] == "approval_requested":
        decision = ask_terminal(event) if interactive else "deny"
        conn.request({"type": "approval_reply", "session": session,
                      "approval": event["approval"], "decision": decision})
    if event["type"] == "turn_finished":
        return event["reason"]
    return None


def run(args):
    conn = Connection(args.socket)
    conn.handshake()
    early = []
    created = conn.call({"type": "create_session",
                         "workspace": os.path.abspath(args.workspace),
                         "model": None, "approval": "on_risk", "max_steps": None,
                         "title": args.prompt[:60]}, early)
    session = created["id"]
    conn.call({"type": "attach_session", "session": session, "after_seq": None}, early)
    conn.call({"type": "send_message", "session": session, "text": args.prompt}, early)
    interactive = sys.stdin.isatty()
    # Ctrl-C interrupts the turn (a handler, not KeyboardInterrupt: an exception could land in
    # the middle of reading a frame and lose our place in the stream).
    signal.signal(signal.SIGINT,
                  lambda *_: conn.request({"type": "interrupt", "session": session}))
    pending = list(early)
    while True:
        message = pending.pop(0) if pending else conn.receive()
        reason = handle(conn, session, message, interactive)
        if reason is not None:
            return 0 if reason == "done" else 1


def main():
    parser = argparse.ArgumentParser(description="Run one prompt in a new agentd session.")
    parser.add_argument("socket", help="agentd's control socket")
    parser.add_argument("prompt", help="what to ask")
    parser.add_argument("--workspace", default=os.getcwd(),
                        help="the directory to work in (default: the current one)")
    args = parser.parse_args()
    try:
        return run(args)
    except (Refused, OSError) as e:
        sys.stderr.write("python_client: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
