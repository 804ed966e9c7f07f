//! Secrets never reach a result, a log or a report: the one place that redacts them. A URL's
//! user information (`redis://:PASSWORD@host`) is redacted wherever a URL appears in a text;
//! credentials kvbench learns during a run (a server's generated password, a bearer token, a
//! password given in a row's URL) are remembered here and redacted wherever they appear.
//! Everything kvbench writes — result files, reports, kept logs, its own stdout and stderr —
//! passes through [`scrub`].

use std::borrow::Cow;
use std::sync::RwLock;

/// What a redacted secret becomes.
pub const MASK: &str = "***";

/// Shorter secrets are redacted inside URLs only: replacing two letters everywhere would
/// garble every text that happens to hold them.
const MIN_LEN: usize = 4;

/// The run's known secrets: process-wide, since every output path of the process must see
/// the same set (a value threaded through each would be one more way to forget one).
static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remember `secret` so that [`scrub`] redacts it from now on.
pub fn remember(secret: &str) {
    if secret.len() < MIN_LEN {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(|e| e.into_inner());
    if !known.iter().any(|k| k == secret) {
        known.push(secret.to_string());
        // Longest first: a secret that contains another is redacted whole.
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
}

/// Remember the user information of every URL in `text` (the password alone too, and its
/// percent-decoded form, as a client library may print either).
pub fn remember_url(text: &str) {
    for info in userinfos(text) {
        remember(info);
        if let Some((_, pw)) = info.split_once(':') {
            remember(pw);
            if let Ok(decoded) = percent_decode(pw) {
                remember(&decoded);
            }
        }
    }
}

/// `text` with URL user information and every remembered secret replaced by [`MASK`].
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = redact_urls(text);
    let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
    for k in known.iter() {
        if out.contains(k.as_str()) {
            out = Cow::Owned(out.replace(k.as_str(), MASK));
        }
    }
    out
}

/// Every string of `v` (object keys too) scrubbed; true when something changed.
pub fn scrub_json(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => scrub_string(s),
        Value::Array(a) => a.iter_mut().fold(false, |c, x| scrub_json(x) | c),
        Value::Object(m) => {
            let mut changed = false;
            let old = std::mem::take(m);
            for (mut k, mut x) in old {
                changed |= scrub_string(&mut k) | scrub_json(&mut x);
                m.insert(k, x);
            }
            changed
        }
        _ => false,
    }
}

fn scrub_string(s: &mut String) -> bool {
    match scrub(s) {
        Cow::Owned(o) => {
            *s = o;
            true
        }
        Cow::Borrowed(_) => false,
    }
}

/// `x` with every string scrubbed (through its JSON form, which is what kvbench writes), or
/// `x` untouched when nothing needed it.
pub fn scrub_serde<T: serde::Serialize + serde::de::DeserializeOwned>(x: &mut T) {
    let Ok(mut v) = serde_json::to_value(&*x) else { return };
    if scrub_json(&mut v) {
        if let Ok(clean) = serde_json::from_value(v) {
            *x = clean;
        }
    }
}

/// Scrubs a file in place (a kept log or job file); a file that cannot be read is left alone.
pub fn scrub_file(path: &std::path::Path) -> std::io::Result<()> {
    let Ok(bytes) = std::fs::read(path) else { return Ok(()) };
    let text = String::from_utf8_lossy(&bytes);
    if let Cow::Owned(clean) = scrub(&text) {
        std::fs::write(path, clean)?;
    }
    Ok(())
}

/// Where a URL's authority ends.
fn authority_end(c: char) -> bool {
    c.is_whitespace() || matches!(c, '/' | '?' | '#' | ',' | '"' | '\'' | '`' | ')' | ']' | '>' | '<' | ';')
}

/// The user information (`user:password` before `@`) of every URL in `text`.
fn userinfos(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after.find(authority_end).unwrap_or(after.len());
        if let Some(at) = after[..end].rfind('@') {
            found.push(&after[..at]);
        }
        rest = &after[end..];
    }
    found
}

/// `text` with each URL's user information replaced by [`MASK`]: `redis://:pw@h:1` becomes
/// `redis://***@h:1`.
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    if userinfos(text).is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after.find(authority_end).unwrap_or(after.len());
        out.push_str(&rest[..i + 3]);
        match after[..end].rfind('@') {
            Some(at) => {
                out.push_str(MASK);
                out.push_str(&after[at..end]);
            }
            None => out.push_str(&after[..end]),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn percent_decode(s: &str) -> Result<String, ()> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or(())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_user_information_is_redacted_in_any_text() {
        assert_eq!(redact_urls("redis://:pw@a:1"), "redis://***@a:1");
        assert_eq!(redact_urls("TCP redis://u:p@w@a:1/0 with a password"), "TCP redis://***@a:1/0 with a password");
        assert_eq!(redact_urls("redis://:x@a:1,redis://b:2"), "redis://***@a:1,redis://b:2");
        assert_eq!(redact_urls("postgres://kv:s3@/db?host=/tmp"), "postgres://***@/db?host=/tmp");
        assert!(matches!(redact_urls("http://host:8080/x?a=b@c"), Cow::Borrowed(_)));
    }

    #[test]
    fn remembered_secrets_are_redacted_everywhere() {
        remember_url("redis://:Plant%40ed-7Q@h:1");
        remember("tok-0123456789");
        remember("ab");
        let s = scrub("auth failed for Plant@ed-7Q and Plant%40ed-7Q; Bearer tok-0123456789; about");
        assert_eq!(s, "auth failed for *** and ***; Bearer ***; about");
        let mut v = serde_json::json!({"url": "redis://:x@h", "l": ["tok-0123456789"], "tok-0123456789": 1});
        assert!(scrub_json(&mut v));
        assert_eq!(v, serde_json::json!({"url": "redis://***@h", "l": ["***"], "***": 1}));
    }
}
