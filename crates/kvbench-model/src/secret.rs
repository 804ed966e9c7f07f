//! Secrets never reach a result, a log or a report: the one place that redacts them. A URL's
//! user information (`redis://:PASSWORD@host`) and its credential-bearing query parameters
//! (`?password=`, `sslpassword=`, `token=`, `auth=` ...) are redacted wherever a URL appears;
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
/// percent-decoded form, as a client library may print either), and the value of every
/// credential-bearing query parameter.
pub fn remember_url(text: &str) {
    let remember_both = |pw: &str| {
        remember(pw);
        if let Ok(decoded) = percent_decode(pw) {
            remember(&decoded);
        }
    };
    for info in userinfos(text) {
        remember(info);
        if let Some((_, pw)) = info.split_once(':') {
            remember_both(pw);
        }
    }
    for (_, value) in secret_params(text) {
        remember_both(value);
    }
}

/// A row's `url` as given, or the URL it refers to: `env:NAME` (the environment variable
/// NAME) or `file:PATH` (the first line of a regular file), so that no credential needs to be
/// on a command line (`ps` shows it) or in a scenario file. The reference, not the URL, is
/// what a result records.
pub fn resolve_url(text: &str) -> Result<String, String> {
    let url = if let Some(name) = text.strip_prefix("env:") {
        std::env::var(name).map_err(|e| format!("url `{text}`: environment variable {name}: {e}"))?
    } else if let Some(path) = text.strip_prefix("file:") {
        let limit = crate::input::limits::TOKEN_BYTES;
        let bytes = crate::input::read_regular(std::path::Path::new(path), "url file", limit)?;
        let text = String::from_utf8_lossy(&bytes);
        text.lines().next().unwrap_or_default().to_string()
    } else {
        return Ok(text.to_string());
    };
    let url = url.trim().to_string();
    if url.is_empty() {
        return Err(format!("url `{text}`: empty"));
    }
    Ok(url)
}

/// A query parameter whose value is a credential: libpq's `password` and `sslpassword`,
/// tokens, `auth` (Redis clients), secrets and API keys, under any prefix (`db_password`).
fn is_secret_param(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    const EXACT: [&str; 6] = ["pass", "passwd", "pwd", "auth", "authorization", "sig"];
    const ENDS: [&str; 6] = ["password", "token", "secret", "api_key", "apikey", "auth"];
    EXACT.contains(&k.as_str()) || ENDS.iter().any(|e| k.ends_with(e))
}

/// Where a URL ends in a text: a space or a quote or bracket around it.
fn url_end(character: char) -> bool {
    character.is_whitespace() || matches!(character, '"' | '\'' | '`' | '<' | '>')
}

/// (start, value) of every credential-bearing query parameter's value in the URLs of `text`.
fn secret_params(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("://") {
        let start = from + i + 3;
        let end = text[start..].find(url_end).map_or(text.len(), |e| start + e);
        if let Some(q) = text[start..end].find('?') {
            let query_end = text[start + q..end].find('#').map_or(end, |h| start + q + h);
            let mut at = start + q + 1;
            for param in text[at..query_end].split(['&', ';']) {
                if let Some((k, v)) = param.split_once('=') {
                    if is_secret_param(k) && !v.is_empty() {
                        found.push((at + k.len() + 1, v));
                    }
                }
                at += param.len() + 1;
            }
        }
        from = end.max(start);
    }
    found
}

/// `text` with every credential-bearing query parameter's value replaced by [`MASK`].
fn redact_params(text: &str) -> Cow<'_, str> {
    let found = secret_params(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, v) in found {
        out.push_str(&text[last..at]);
        out.push_str(MASK);
        last = at + v.len();
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// `text` with URL user information, credential query parameters and every remembered secret
/// replaced by [`MASK`].
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = match redact_urls(text) {
        Cow::Borrowed(t) => redact_params(t),
        Cow::Owned(t) => Cow::Owned(redact_params(&t).into_owned()),
    };
    let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
    for k in known.iter() {
        if out.contains(k.as_str()) {
            out = Cow::Owned(out.replace(k.as_str(), MASK));
        }
    }
    out
}

/// Every string of `value` (object keys too) scrubbed; true when something changed.
pub fn scrub_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
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

fn scrub_string(text: &mut String) -> bool {
    match scrub(text) {
        Cow::Owned(o) => {
            *text = o;
            true
        }
        Cow::Borrowed(_) => false,
    }
}

/// `value` with every string scrubbed (through its JSON form, which is what kvbench writes), or
/// `value` untouched when nothing needed it.
pub fn scrub_serde<T: serde::Serialize + serde::de::DeserializeOwned>(value: &mut T) {
    let Ok(mut v) = serde_json::to_value(&*value) else { return };
    if scrub_json(&mut v) {
        if let Ok(clean) = serde_json::from_value(v) {
            *value = clean;
        }
    }
}

/// Whether `text` holds a redacted field's shape (a URL whose secret became [`MASK`]): a file
/// of it is written readable by its owner only, whatever was redacted from it.
pub fn holds_redaction(text: &[u8]) -> bool {
    let mask = MASK.as_bytes();
    text.windows(mask.len()).any(|w| w == mask)
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
fn authority_end(character: char) -> bool {
    character.is_whitespace()
        || matches!(character, '/' | '?' | '#' | ',' | '"' | '\'' | '`' | ')' | ']' | '>' | '<' | ';')
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

fn percent_decode(text: &str) -> Result<String, ()> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = text.get(i + 1..i + 3).ok_or(())?;
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
    fn regression_credential_query_parameters_are_redacted_like_the_userinfo() {
        let url = "postgres=postgresql://u:p@h/db?sslmode=disable&password=SECRET&x=1";
        assert_eq!(scrub(url), "postgres=postgresql://***@h/db?sslmode=disable&password=***&x=1");
        for (given, want) in [
            ("redis://h:1/0?auth=hunter22", "redis://h:1/0?auth=***"),
            ("http://h/x?token=abc&a=b#token=frag", "http://h/x?token=***&a=b#token=frag"),
            ("pg://h/db?SSLPassword=k1;db_password=k2 then", "pg://h/db?SSLPassword=***;db_password=*** then"),
            ("\"http://h/?api-key=z9\"", "\"http://h/?api-key=***\""),
            ("http://h/?keyspace=ks&passes=2", "http://h/?keyspace=ks&passes=2"),
            ("password=plain without a url", "password=plain without a url"),
        ] {
            assert_eq!(redact_params(given), want, "{given}");
        }
        remember_url("postgresql://h/db?password=Query%2FSecret");
        assert_eq!(scrub("libpq: password Query/Secret refused"), "libpq: password *** refused");
    }

    #[test]
    fn urls_by_reference_resolve_from_the_environment_or_a_file() {
        std::env::set_var("KVBENCH_TEST_URL_42", "redis://:pw@h:1\n");
        assert_eq!(resolve_url("env:KVBENCH_TEST_URL_42").unwrap(), "redis://:pw@h:1");
        let e = resolve_url("env:KVBENCH_TEST_URL_UNSET_42").unwrap_err();
        assert!(e.contains("KVBENCH_TEST_URL_UNSET_42"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("url");
        std::fs::write(&f, "postgresql://u:p@h/db\nsecond line\n").unwrap();
        assert_eq!(resolve_url(&format!("file:{}", f.display())).unwrap(), "postgresql://u:p@h/db");
        let e = resolve_url(&format!("file:{}", d.path().display())).unwrap_err();
        assert!(e.contains("a directory"), "{e}");
        assert_eq!(resolve_url("redis://h:1").unwrap(), "redis://h:1");
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
