//! Arbitrary config text: a policy or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = policy::Policy::from_config(&text, "fuzz.toml");
});
