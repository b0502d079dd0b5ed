//! Arbitrary bytes as command text through the whole bash rating: never a panic, never a crash
//! (the parser's scanner is C: this is what found its isdigit() on code points).
#![no_main]

use libfuzzer_sys::fuzz_target;
use policy::{Context, Policy};
use std::path::Path;
use std::sync::OnceLock;

fn policy() -> Option<&'static Policy> {
    static P: OnceLock<Option<Policy>> = OnceLock::new();
    P.get_or_init(|| Policy::builtin().ok()).as_ref()
}

fuzz_target!(|data: &[u8]| {
    let Some(policy) = policy() else { return };
    let text = String::from_utf8_lossy(data);
    let ctx = Context { workspace: Path::new("/work/project"), home: Some(Path::new("/home/dev")) };
    let _ = policy.check_bash(&text, &ctx);
});
