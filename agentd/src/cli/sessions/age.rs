//! Ages as people write and read them: `30d`, `12h`, `90m`, `45s`, `2w` (pure).

/// Milliseconds in a second, minute, hour, day, week.
const UNITS: [(char, u64); 5] = [
    ('s', 1_000),
    ('m', 60_000),
    ('h', 3_600_000),
    ('d', 86_400_000),
    ('w', 604_800_000),
];

/// `text` as milliseconds: a whole number and one unit (s, m, h, d, w).
pub fn parse(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("{text:?} is not an age: write a number and a unit, e.g. 30d, 12h, 90m, 45s or 2w")
    };
    let text = text.trim();
    let unit = text.chars().last().ok_or_else(bad)?;
    let per = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, ms)| *ms)
        .ok_or_else(bad)?;
    let number: u64 = text[..text.len() - unit.len_utf8()]
        .parse()
        .map_err(|_| bad())?;
    number.checked_mul(per).ok_or_else(bad)
}

/// How long ago, in the largest unit that fits.
pub fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_their_unit_and_nonsense_names_the_form() {
        assert_eq!(parse("45s"), Ok(45_000));
        assert_eq!(parse("90m"), Ok(5_400_000));
        assert_eq!(parse("12h"), Ok(43_200_000));
        assert_eq!(parse("30d"), Ok(2_592_000_000));
        assert_eq!(parse("2w"), Ok(1_209_600_000));
        assert_eq!(parse("0d"), Ok(0));
        for bad in [
            "",
            "30",
            "d",
            "3x",
            "-1d",
            "1.5d",
            "30dd",
            "99999999999999999999w",
            "é",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("e.g. 30d"), "{bad}: {e}");
        }
    }
}
