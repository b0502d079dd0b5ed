//! Helpers shared by the end-to-end suites in `tests/tests/`.
