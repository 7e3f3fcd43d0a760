//! Names a user typed, against the names that exist: the nearest one, for a
//! "did you mean" hint.

/// The Damerau–Levenshtein distance of two names (a letter changed, added,
/// dropped, or two neighbours swapped each count 1).
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, v) in d[0].iter_mut().enumerate() {
        *v = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[n][m]
}

/// The known name nearest to `name`, if one is near enough to be a typo of
/// it: at most one edit for names of up to 4 letters, two up to 9, else three.
/// Ties go to the first in `known`.
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = name.chars().count();
    let most = match len {
        0..=4 => 1,
        5..=9 => 2,
        _ => 3,
    };
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        if k == name {
            continue;
        }
        // A difference of case alone is the nearest there is.
        let d = if k.to_lowercase() == lower { 0 } else { distance(name, k) };
        if d <= most && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// ` (did you mean 'x'?)`, or nothing.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    nearest(name, known).map(|k| format!(" (did you mean '{k}'?)")).unwrap_or_default()
}

/// `s` cut to `max` characters, saying how long it was.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max).collect();
        format!("{t}… ({} chars)", s.chars().count())
    }
}

/// Whether a message starts with `file:line:`.
pub fn has_location(msg: &str) -> bool {
    let mut parts = msg.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(file), Some(line), Some(_)) => {
            !file.is_empty() && !file.contains(' ') && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// The `(file, line)` a message starts with, for sorting messages by where they point.
pub fn location_key(msg: &str) -> (String, u64) {
    if !has_location(msg) {
        return (String::new(), 0);
    }
    let mut parts = msg.splitn(3, ':');
    let file = parts.next().unwrap_or("").to_string();
    let line = parts.next().and_then(|l| l.parse().ok()).unwrap_or(0);
    (file, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_none() {
        let known = ["lookup_order", "verify_identity", "issue_refund", "send_email"];
        assert_eq!(nearest("verify_identiy", known), Some("verify_identity"));
        assert_eq!(nearest("lookup_ordre", known), Some("lookup_order"), "a swap is one edit");
        assert_eq!(nearest("isue_refnd", known), Some("issue_refund"));
        assert_eq!(nearest("Send_Email", known), Some("send_email"));
        assert_eq!(nearest("delete_everything", known), None);
        assert_eq!(nearest("ab", ["xy"]), None);
        assert_eq!(distance("abc", "acb"), 1);
    }
}
