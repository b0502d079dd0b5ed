//! Unguessable bytes from the kernel's CSPRNG (`getrandom(2)`), for names another local user
//! must not predict: session ids and temp dir names.

/// `N` random bytes. `getrandom` without flags blocks only until the pool is first seeded (early
/// boot), and never returns short for 256 bytes or fewer except on a signal, which is retried.
pub fn bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    let mut filled = 0;
    while filled < N {
        let rest = &mut buf[filled..];
        // SAFETY: `rest` is a valid, writable buffer of `rest.len()` bytes that outlives the
        // call; getrandom writes at most that many bytes into it.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n.unsigned_abs();
    }
    Ok(buf)
}

/// `N` random bytes in lowercase hex (`2 * N` characters).
pub fn hex<const N: usize>() -> std::io::Result<String> {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 * N);
    for b in bytes::<N>()? {
        let _ = write!(s, "{b:02x}");
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn draws_differ_and_are_hex_of_the_asked_length() {
        let (a, b) = (super::hex::<16>().unwrap(), super::hex::<16>().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
}
