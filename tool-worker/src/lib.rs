//! The tool-worker: a fresh, single-threaded process per tool call that locks itself down
//! (rlimits, capabilities, no_new_privs, Landlock, seccomp) before it reads its request, runs exactly
//! one tool and exits.
