//! Redaction of what a provider says before Lore keeps, logs or shows it.
//!
//! A provider's error reply is untrusted text: some echo the request's
//! `Authorization` header, or the key itself, in a 401 body. Everything a
//! provider sends that ends up in an error (and from there in a stored
//! `probe_error`, a log line or an API response) goes through [`scrub`]
//! first, in [`super::client`].
//!
//! The scanning is written by hand: the patterns are few and ASCII, and a
//! single pass over the bytes keeps the cost linear in the reply's length.

use crate::settings::Secret;

/// What stands in for a secret or a credential-like value.
pub const REDACTED: &str = Secret::REDACTED;

/// The most characters [`scrub`] returns, the ellipsis included, so that a
/// stored error is bounded whatever the provider sent.
pub const MAX_CHARS: usize = 500;

/// Header and parameter names whose value is a credential. Matched without
/// regard to case and anywhere in a word, so `x-api-key`, `x-goog-api-key`
/// and `"Authorization"` are covered by `api-key` and `authorization`.
const CREDENTIAL_NAMES: [&str; 5] = ["authorization", "api-key", "api_key", "apikey", "access_token"];

/// Authentication schemes kept in front of a redacted header value, so the
/// admin still sees which kind of credential was refused.
const SCHEMES: [&str; 4] = ["bearer", "basic", "token", "digest"];

/// Prefixes of API keys in the OpenAI style (`sk-…`, `sk-proj-…`, Groq's
/// `gsk_…`, Lore's own `lore_sk_…`).
const KEY_PREFIXES: [&str; 2] = ["sk-", "sk_"];

/// How many key characters must follow a key prefix for the token to count
/// as a key rather than a word such as `sk-learn`.
const MIN_KEY_CHARS: usize = 16;

/// How many credential characters must follow a bare `Bearer`/`Basic` (with
/// no header name before it) before it counts as a credential, so that prose
/// like "bearer token" is left alone.
const MIN_BARE_CREDENTIAL_CHARS: usize = 16;

/// `text` with every occurrence of each of `secrets` and anything that looks
/// like a credential replaced by [`REDACTED`], control characters removed
/// (line breaks and tabs become spaces) and the result cut to at most
/// [`MAX_CHARS`] characters, ending in `…` when cut.
///
/// What counts as a credential whatever the key: the value after an
/// `Authorization`, `x-api-key`, `api-key`, `api_key`, `apikey` or
/// `access_token` name followed by `:` or `=` (quoted or not, as in a header
/// dump, a JSON object or a query string); a long token after a bare
/// `Bearer` or `Basic`; and `sk-`/`sk_` followed by 16 or more key
/// characters.
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    // Control characters go first: dropped later, they could join the two
    // halves of a key that the scan below had not recognised apart.
    let text = visible(text);
    let text = text.as_str();
    // Blank secrets would match everywhere; the longest goes first so that a
    // secret containing another is replaced whole.
    let mut secrets: Vec<String> =
        secrets.iter().map(|s| visible(s).trim().to_owned()).filter(|s| !s.is_empty()).collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();

    let bytes = text.as_bytes();
    let mut out = Output::default();
    // `text[emitted..]` is what has not been written out yet; every index
    // stored in it is on a character boundary (see `find_at`).
    let mut emitted = 0;
    let mut at = 0;
    while at < bytes.len() && !out.full() {
        match find_at(text, at, &secrets) {
            Some(span) => {
                out.push_plain(text.get(emitted..span.start).unwrap_or_default());
                out.push_redacted();
                emitted = span.end;
                at = span.end.max(at + 1);
            }
            None => {
                at += 1;
                // Long stretches without a match are written out as they
                // go, at spaces, so that scanning stops soon after the
                // output is full rather than at the end of a large body.
                if at - emitted >= 4 * MAX_CHARS && bytes.get(at - 1).is_some_and(u8::is_ascii_whitespace) {
                    out.push_plain(text.get(emitted..at).unwrap_or_default());
                    emitted = at;
                }
            }
        }
    }
    if !out.full() {
        out.push_plain(text.get(emitted..).unwrap_or_default());
    }
    out.finish()
}

/// The bytes of `text` to replace, as `start..end`.
struct Span {
    start: usize,
    end: usize,
}

/// The first span to redact that is found at byte `at`, if any.
///
/// Every pattern starts with a secret or an ASCII byte, and every span ends
/// at an ASCII byte, the end of a secret, or the end of the text, so span
/// bounds always fall on character boundaries (UTF-8 never uses ASCII byte
/// values inside a multi-byte character).
fn find_at(text: &str, at: usize, secrets: &[&str]) -> Option<Span> {
    let bytes = text.as_bytes();
    let rest = bytes.get(at..)?;
    if let Some(secret) = secrets.iter().find(|secret| rest.starts_with(secret.as_bytes())) {
        return Some(Span { start: at, end: at + secret.len() });
    }
    if let Some(name) = CREDENTIAL_NAMES.iter().find(|name| starts_with_ignore_case(rest, name)) {
        if let Some(span) = named_value(bytes, at + name.len()) {
            return Some(span);
        }
    }
    if let Some(prefix) = KEY_PREFIXES.iter().find(|prefix| rest.starts_with(prefix.as_bytes())) {
        let start = at + prefix.len();
        let end = run_end(bytes, start, is_key_char);
        if end - start >= MIN_KEY_CHARS {
            return Some(Span { start: at, end });
        }
    }
    let word_start = at == 0 || bytes.get(at - 1).is_some_and(|b| !b.is_ascii_alphanumeric());
    if word_start {
        if let Some(scheme) = ["bearer", "basic"].iter().find(|scheme| starts_with_ignore_case(rest, scheme))
        {
            let after = at + scheme.len();
            let start = run_end(bytes, after, |b| b == b' ');
            let end = run_end(bytes, start, is_credential_char);
            if start > after && end - start >= MIN_BARE_CREDENTIAL_CHARS {
                return Some(Span { start, end });
            }
        }
    }
    None
}

/// The value after a credential name that ends at byte `at`: an optional
/// closing quote of the name, a `:` or `=`, then the value, quoted or not,
/// after an authentication scheme if there is one. `None` when no separator
/// follows (the name is then only mentioned, as in "missing api_key").
fn named_value(bytes: &[u8], at: usize) -> Option<Span> {
    let mut at = skip_quote(bytes, at).map_or(at, |(end, _)| end);
    at = skip_spaces(bytes, at);
    if !matches!(bytes.get(at), Some(b':' | b'=')) {
        return None;
    }
    at = skip_spaces(bytes, at + 1);
    // Already redacted: scrubbing twice changes nothing.
    if is_redacted(bytes, at) {
        return None;
    }
    // A dump of headers may give each value as a list.
    if bytes.get(at) == Some(&b'[') {
        at = skip_spaces(bytes, at + 1);
    }
    let quote = skip_quote(bytes, at);
    if let Some((end, _)) = quote {
        at = end;
    }
    at = skip_scheme(bytes, at);
    if is_redacted(bytes, at) {
        return None;
    }
    let end = match quote {
        Some((_, closing)) => quoted_end(bytes, at, closing),
        None => run_end(bytes, at, |b| !is_value_stop(b)),
    };
    (end > at).then_some(Span { start: at, end })
}

/// Skips an opening or closing quote at `at` (`"`, `'`, or either escaped
/// with a backslash, as in JSON inside a JSON string): the index after it
/// and the bytes that close what it opened.
fn skip_quote(bytes: &[u8], at: usize) -> Option<(usize, &'static [u8])> {
    match (bytes.get(at), bytes.get(at + 1)) {
        (Some(b'"'), _) => Some((at + 1, b"\"")),
        (Some(b'\''), _) => Some((at + 1, b"'")),
        (Some(b'\\'), Some(b'"')) => Some((at + 2, b"\\\"")),
        (Some(b'\\'), Some(b'\'')) => Some((at + 2, b"\\'")),
        _ => None,
    }
}

/// Skips an authentication scheme and the spaces after it, when the word at
/// `at` is one and something follows it.
fn skip_scheme(bytes: &[u8], at: usize) -> usize {
    let rest = bytes.get(at..).unwrap_or_default();
    let Some(scheme) = SCHEMES.iter().find(|scheme| starts_with_ignore_case(rest, scheme)) else {
        return at;
    };
    let after = at + scheme.len();
    let value = skip_spaces(bytes, after);
    if value > after && bytes.get(value).is_some_and(|b| !is_value_stop(*b)) {
        value
    } else {
        at
    }
}

/// Where a quoted value that starts at `at` ends: at its closing quote (an
/// unescaped one, for a plain quote), or at the end of the text.
fn quoted_end(bytes: &[u8], at: usize, closing: &[u8]) -> usize {
    let mut end = at;
    while end < bytes.len() {
        let rest = bytes.get(end..).unwrap_or_default();
        if rest.starts_with(closing) && (closing.len() > 1 || bytes.get(end.wrapping_sub(1)) != Some(&b'\\'))
        {
            return end;
        }
        end += 1;
    }
    end
}

fn is_redacted(bytes: &[u8], at: usize) -> bool {
    bytes.get(at..).is_some_and(|rest| rest.starts_with(REDACTED.as_bytes()))
}

fn starts_with_ignore_case(bytes: &[u8], word: &str) -> bool {
    bytes.get(..word.len()).is_some_and(|start| start.eq_ignore_ascii_case(word.as_bytes()))
}

fn skip_spaces(bytes: &[u8], at: usize) -> usize {
    run_end(bytes, at, |b| b == b' ' || b == b'\t')
}

/// The index of the first byte from `at` on that is not `accepted`.
fn run_end(bytes: &[u8], at: usize, accepted: impl Fn(u8) -> bool) -> usize {
    let mut end = at;
    while bytes.get(end).is_some_and(|b| accepted(*b)) {
        end += 1;
    }
    end
}

/// What may follow `sk-`/`sk_` in a key.
fn is_key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// What a bearer token or a Basic credential is made of (RFC 6750's
/// `b64token`).
fn is_credential_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// What ends an unquoted value: whitespace, quotes and the separators of
/// JSON, header lists and query strings.
fn is_value_stop(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(b, b'"' | b'\'' | b',' | b';' | b'&' | b'}' | b']' | b')' | b'<' | b'>')
}

/// The redacted text being built, counted in characters and bounded.
#[derive(Default)]
struct Output {
    text: String,
    chars: usize,
}

impl Output {
    /// Whether more text could no longer change the result (it is already
    /// longer than the cap and will be cut).
    fn full(&self) -> bool {
        self.chars > MAX_CHARS
    }

    /// Appends text that is not to be redacted.
    fn push_plain(&mut self, text: &str) {
        for c in text.chars() {
            if self.full() {
                return;
            }
            // Leading whitespace is dropped as it comes, so that the count
            // is that of the text returned.
            if self.text.is_empty() && c.is_whitespace() {
                continue;
            }
            self.text.push(c);
            self.chars += 1;
        }
    }

    fn push_redacted(&mut self) {
        if !self.full() {
            self.text.push_str(REDACTED);
            self.chars += REDACTED.chars().count();
        }
    }

    /// The text without trailing whitespace; when it is over the cap, its
    /// first [`MAX_CHARS`] - 1 characters and `…`, so a cut is visible.
    fn finish(self) -> String {
        if !self.full() {
            return self.text.trim_end().to_owned();
        }
        let cut = self.text.char_indices().nth(MAX_CHARS - 1).map_or(self.text.len(), |(at, _)| at);
        let mut capped = self.text.get(..cut).unwrap_or_default().trim_end().to_owned();
        capped.push('…');
        capped
    }
}

/// `text` with line breaks and tabs turned into spaces, and other control
/// characters and the invisible characters that reorder or hide text on
/// screen dropped.
fn visible(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() || is_invisible(c) => None,
            c => Some(c),
        })
        .collect()
}

/// Bidirectional overrides and isolates, zero-width characters and the byte
/// order mark: they can make an admin read something other than what is
/// stored.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "lk-9fQ2xR7vT1mB8nW4";

    #[test]
    fn scrub_redacts_keys_credentials_and_controls() {
        let other = "sk-proj-ZZZZaaaa1111bbbb2222cccc";
        let cases: Vec<(&str, String, String)> = vec![
            (
                "the key echoed verbatim",
                format!("Incorrect API key provided: {KEY}."),
                "Incorrect API key provided: [redacted].".into(),
            ),
            ("the key twice, with a suffix", format!("{KEY}{KEY}x"), "[redacted][redacted]x".into()),
            (
                "an Authorization header with another key",
                "you sent Authorization: Bearer 0123456789abcdef-other, which is wrong".into(),
                "you sent Authorization: Bearer [redacted], which is wrong".into(),
            ),
            (
                "a lowercase authorization header with Basic",
                "authorization=Basic dXNlcjpwYXNz".into(),
                "authorization=Basic [redacted]".into(),
            ),
            (
                "an Authorization header in JSON",
                r#"{"headers":{"Authorization":"Bearer abc def"}}"#.into(),
                r#"{"headers":{"Authorization":"Bearer [redacted]"}}"#.into(),
            ),
            (
                "an x-api-key in JSON",
                r#"{"error":"bad key","x-api-key": "k3y-v4lue"}"#.into(),
                r#"{"error":"bad key","x-api-key": "[redacted]"}"#.into(),
            ),
            (
                "escaped JSON inside a JSON string",
                r#"{\"api_key\":\"abc-def\"}"#.into(),
                r#"{\"api_key\":\"[redacted]\"}"#.into(),
            ),
            (
                "a header list",
                r#"{"authorization": ["Bearer xyz"]}"#.into(),
                r#"{"authorization": ["Bearer [redacted]"]}"#.into(),
            ),
            (
                "an unquoted header list",
                "authorization: [Bearer xyz]".into(),
                "authorization: [Bearer [redacted]]".into(),
            ),
            (
                "a query string",
                "GET /v1/models?apikey=abc123&x=1".into(),
                "GET /v1/models?apikey=[redacted]&x=1".into(),
            ),
            ("api-key header", "Api-Key: 42".into(), "Api-Key: [redacted]".into()),
            ("an sk- token", format!("key {other} is revoked"), "key [redacted] is revoked".into()),
            ("an sk_ token inside a word", "gsk_0123456789abcdefXYZ!".into(), "g[redacted]!".into()),
            (
                "a bare bearer token",
                "token Bearer eyJhbGciOiJIUzI1NiJ9.e30.x refused".into(),
                "token Bearer [redacted] refused".into(),
            ),
            ("control characters", "line\none\u{0}\u{7}\tend\u{202E}\r\n".into(), "line one end".into()),
            (
                "a name that is only mentioned",
                "missing api_key; see the Authorization header docs".into(),
                "missing api_key; see the Authorization header docs".into(),
            ),
            (
                "prose about bearer tokens",
                "a bearer token is required".into(),
                "a bearer token is required".into(),
            ),
            ("a short sk- word", "use sk-learn".into(), "use sk-learn".into()),
            (
                "non-ASCII text around a key",
                format!("clé « {KEY} » refusée"),
                "clé « [redacted] » refusée".into(),
            ),
            ("nothing to redact", "Bad Gateway".into(), "Bad Gateway".into()),
            ("empty", String::new(), String::new()),
        ];
        for (what, input, expected) in cases {
            assert_eq!(scrub(&input, &[KEY]), expected, "{what}");
        }
    }

    #[test]
    fn scrub_finds_a_key_split_by_control_characters() {
        let split = format!("{}\u{0}{}", &KEY[..6], &KEY[6..]);
        assert_eq!(scrub(&format!("bad key {split}"), &[KEY]), "bad key [redacted]");
    }

    #[test]
    fn scrub_ignores_blank_secrets_and_replaces_the_longest_first() {
        assert_eq!(scrub("a b", &["", "  "]), "a b");
        assert_eq!(scrub("abcdef abc", &["abc", "abcdef"]), "[redacted] [redacted]");
        assert_eq!(scrub(&format!("x {KEY} y"), &[&format!("  {KEY}\n")]), "x [redacted] y");
    }

    #[test]
    fn scrub_caps_a_large_body() {
        let body = format!("{}{KEY}", "é".repeat(100 * 1024));
        let scrubbed = scrub(&body, &[KEY]);
        assert_eq!(scrubbed.chars().count(), MAX_CHARS);
        assert!(scrubbed.ends_with('…'));
        assert!(scrubbed.starts_with("éé"));

        // A key cut by the cap leaves none of itself behind.
        let body = format!("{}{KEY}", "a".repeat(MAX_CHARS - 5));
        let scrubbed = scrub(&body, &[KEY]);
        assert!(!scrubbed.contains(&KEY[..4]), "{scrubbed}");
        assert_eq!(scrubbed.chars().count(), MAX_CHARS);

        // A cut is marked even where the text goes on after a space, and
        // leading spaces do not count.
        let scrubbed = scrub(&format!("{} tail", "x".repeat(MAX_CHARS)), &[]);
        assert_eq!(scrubbed, format!("{}…", "x".repeat(MAX_CHARS - 1)));
        let scrubbed = scrub(&format!("\n  {}", "x".repeat(MAX_CHARS)), &[]);
        assert_eq!(scrubbed, "x".repeat(MAX_CHARS), "exactly at the cap: not cut");

        // Spaces let scanning stop early; the result is the same.
        let spaced = "word ".repeat(30_000);
        let scrubbed = scrub(&spaced, &[]);
        assert_eq!(scrubbed.chars().count(), MAX_CHARS);
        assert_eq!(scrub(&scrubbed, &[]), scrubbed, "scrubbing twice changes nothing");
    }

    #[test]
    fn scrub_is_idempotent_on_redacted_headers() {
        for text in [
            "Authorization: Bearer abcdef",
            "authorization: [redacted]",
            r#"{"x-api-key": ["k"]}"#,
            "api_key=sk-0123456789abcdefghij",
        ] {
            let once = scrub(text, &[]);
            assert!(once.contains(REDACTED), "{once}");
            assert_eq!(scrub(&once, &[]), once, "{text}");
        }
    }
}
