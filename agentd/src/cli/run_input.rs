//! Where `agent run`'s task comes from: `-p PROMPT`, `-p -` for standard input, or standard
//! input itself when it is piped and there is no `-p` (`git diff | agent run`).

use anyhow::{Context as _, Result};
use std::io::{IsTerminal, Read};

/// The longest task read from standard input: what one message may hold.
const MAX_BYTES: usize = protocol::control::SendMessage::MAX_TEXT_BYTES;

/// The task: `given` (`-p`), standard input for `-p -` or for a piped stdin without `-p`.
pub fn prompt(given: Option<&str>) -> Result<String> {
    let stdin = std::io::stdin();
    let text = match given {
        Some("-") => read(stdin.lock())?,
        Some(text) => text.to_owned(),
        None if !stdin.is_terminal() => read(stdin.lock())?,
        None => anyhow::bail!(
            "no task: give it with -p PROMPT, or on standard input (-p -, or pipe it in)"
        ),
    };
    if text.trim().is_empty() {
        anyhow::bail!("the task is empty: give it with -p PROMPT, or on standard input");
    }
    Ok(text)
}

/// All of `input` as UTF-8, at most [`MAX_BYTES`].
fn read(input: impl Read) -> Result<String> {
    let mut bytes = Vec::new();
    input
        .take(MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .context("cannot read the task from standard input")?;
    if bytes.len() > MAX_BYTES {
        anyhow::bail!(
            "the task on standard input is over {MAX_BYTES} bytes: put it in a file of the workspace and name it"
        );
    }
    String::from_utf8(bytes).context("the task on standard input is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_read_whole_and_bounded() {
        assert_eq!(read(&b"fix the test\n"[..]).unwrap(), "fix the test\n");
        let big = vec![b'a'; MAX_BYTES + 1];
        let e = read(&big[..]).unwrap_err().to_string();
        assert!(e.contains("put it in a file"), "{e}");
        assert!(read(&[0xff, 0xfe][..]).is_err());
    }
}
