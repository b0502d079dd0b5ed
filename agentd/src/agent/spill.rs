//! Big tool outputs: the model gets the head and the tail with a marker saying how much was cut
//! and where the whole text is; the whole text is spilled to the session's folder, which every
//! call of the session may read (`read_file` with offset and limit pages through it).

use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::{Mode, fstat};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes of one tool output the model gets.
pub const MODEL_CAP: usize = 30_000;
/// Bytes of one tool output kept whole (and spilled) when the session has a folder for it.
pub const SPILL_CAP: u64 = 8 * 1024 * 1024;

/// `content` fitted to [`MODEL_CAP`]: as it is when it fits, else head and tail with a marker;
/// the whole text is written to `dir` first when there is one. Returns the text and whether it
/// was cut.
pub fn fit(content: String, call_id: &str, dir: Option<&Path>) -> (String, bool) {
    if content.len() <= MODEL_CAP {
        return (content, false);
    }
    let lines = content.lines().count();
    let whole = dir.and_then(|d| write(d, call_id, &content).ok());
    let (head_end, tail_start) = crate::worker::caps::middle(&content, MODEL_CAP);
    let cut = tail_start - head_end;
    let where_ = match &whole {
        Some(path) => format!(
            "the whole output ({} bytes, {lines} lines) is in {}: page through it with read_file (offset, limit)",
            content.len(),
            path.display()
        ),
        None => "the whole output was not kept".to_owned(),
    };
    let text = format!(
        "{}\n[… {cut} bytes cut here; {where_} …]\n{}",
        &content[..head_end],
        &content[tail_start..]
    );
    (text, true)
}

fn write(dir: &Path, call_id: &str, content: &str) -> std::io::Result<PathBuf> {
    let name: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let file_name = format!("{name}.txt");
    // Through the folder's descriptor: the folder may be the session owner's (a root daemon's
    // session of another user), so its owner is read from what was opened, and the new file —
    // never one that was there, never through a link — is given to that owner.
    let folder = open(
        dir,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let owner = fstat(&folder)?.st_uid;
    let fd = openat(
        &folder,
        file_name.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?;
    if owner != nix::unistd::geteuid().as_raw() {
        nix::unistd::fchown(&fd, Some(nix::unistd::Uid::from_raw(owner)), None)?;
    }
    std::fs::File::from(fd).write_all(content.as_bytes())?;
    Ok(dir.join(file_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_output_is_cut_to_head_and_tail_and_kept_whole() {
        let dir = std::env::temp_dir().join(format!("agentd-spill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let content: String = (0..20_000).map(|i| format!("line {i} é\n")).collect();
        let (text, cut) = fit(content.clone(), "call/../x", Some(&dir));
        assert!(cut && text.len() < MODEL_CAP + 500);
        assert!(text.starts_with("line 0 é\n") && text.ends_with("line 19999 é\n"));
        let path = dir.join("call____x.txt");
        assert!(
            text.contains(&path.display().to_string()),
            "{}",
            &text[14_000..16_500]
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), content);
        let (small, cut) = fit("ok\n".into(), "c", Some(&dir));
        assert_eq!((small.as_str(), cut), ("ok\n", false));
        let (text, _) = fit(content, "c2", None);
        assert!(text.contains("the whole output was not kept"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
