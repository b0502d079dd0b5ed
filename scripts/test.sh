#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need, then runs them.
# Usage: bash scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

# What the suites need beyond the Rust toolchain. Installed only when missing, so a warm machine
# pays nothing; CI starts from a clean clone and may start from a clean machine.
need_apt=()
command -v gcc >/dev/null || need_apt+=(gcc libc6-dev)
command -v python3 >/dev/null || need_apt+=(python3)
command -v useradd >/dev/null || need_apt+=(passwd)
command -v setpriv >/dev/null || need_apt+=(util-linux)
# The "still works" suite (tests/tests/still_works.rs) runs git, a venv and pytest inside the
# sandbox, whose PATH is the tool's (no pyenv or ~/.local): check the python3 found there.
command -v git >/dev/null || need_apt+=(git)
# The systemd suites (tests/tests/{systemd,dist}.rs) use systemd's tools (systemd-analyze,
# systemd-socket-activate, systemd-tmpfiles, systemd-sysusers; no running systemd needed) and
# strace; without them those checks are skipped, saying so.
command -v systemd-analyze >/dev/null || need_apt+=(systemd)
command -v strace >/dev/null || need_apt+=(strace)
command -v tmux >/dev/null || need_apt+=(tmux)  # the REPL suite (tests/tests/repl.rs) drives `agent` in tmux
command -v make >/dev/null || need_apt+=(make)  # tests/tests/escape_git_depth.rs: the model plants through a Makefile
tool_python=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v python3 || true)
if [[ -z $tool_python ]] || ! "$tool_python" -c 'import ensurepip' 2>/dev/null; then
  need_apt+=(python3-venv)
fi
if [[ -z $tool_python ]] || ! "$tool_python" -c 'import pytest' 2>/dev/null; then
  need_apt+=(python3-pytest)
fi
if ((${#need_apt[@]})); then
  echo "scripts/test.sh: installing ${need_apt[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

cargo build --workspace --bins
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
