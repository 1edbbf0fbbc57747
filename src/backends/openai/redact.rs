//! Keeps credentials out of errors, logs and `Debug` output: the API key, and
//! whatever a `base_url` carries, such as `https://user:pass@host/v1` or
//! `?api_key=...`. HTTP errors name the URL, and servers echo what they were sent,
//! so every text from outside passes through [`Redactor::scrub`].

const REDACTED: &str = "<redacted>";

/// Query parameters whose value is a secret at any length.
const SECRET_PARAMS: [&str; 8] = [
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "auth",
    "sig",
    "credential",
];

/// A value shorter than this is replaced only as part of the whole userinfo or
/// query: replacing every `a` or `1` in a message would shred it, and a secret
/// that short protects nothing.
const MIN_SECRET_LEN: usize = 4;

/// Replaces each secret of a backend with `<redacted>`.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// What to find, and what to put in its place; longest first, so a whole query
    /// goes before the values inside it.
    replacements: Vec<(String, String)>,
}

impl Redactor {
    /// The secrets of `base_url`, and the API key if there is one.
    pub(crate) fn new(base_url: &str, key: Option<&str>) -> Self {
        let mut replacements = Vec::new();
        let mut secret = |text: &str| {
            if text.len() >= MIN_SECRET_LEN {
                replacements.push((text.to_owned(), REDACTED.to_owned()));
            }
        };
        secret(key.unwrap_or_default());
        // The URL as written, and as the HTTP client writes it in its errors.
        let normalized = reqwest::Url::parse(base_url).ok().map(String::from);
        let forms = std::iter::once(base_url).chain(normalized.as_deref());
        let mut wholes = Vec::new();
        for url in forms {
            let parts = UrlParts::of(url);
            if let Some(userinfo) = parts.userinfo {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                for part in [user, password] {
                    secret(part);
                    secret(&percent_decode(part));
                }
                wholes.push((format!("{userinfo}@"), format!("{REDACTED}@")));
            }
            if let Some(query) = parts.query {
                for (name, value) in query_pairs(query) {
                    let name = name.to_ascii_lowercase();
                    let named = SECRET_PARAMS.iter().any(|param| name.contains(param));
                    // Long values are treated as secrets whatever their name.
                    if named || value.len() >= 8 {
                        secret(value);
                        secret(&percent_decode(value));
                    }
                }
                wholes.push((query.to_owned(), redact_query(query)));
            }
        }
        replacements.extend(wholes.into_iter().filter(|(text, _)| text.len() > 1));
        replacements.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        replacements.dedup_by(|a, b| a.0 == b.0);
        Self { replacements }
    }

    /// The length of the longest text that is replaced, in bytes.
    pub(crate) fn longest(&self) -> usize {
        self.replacements.first().map_or(0, |(text, _)| text.len())
    }

    /// `text` with every secret replaced.
    pub(crate) fn scrub(&self, mut text: String) -> String {
        for (secret, replacement) in &self.replacements {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), replacement);
            }
        }
        text
    }
}

/// `url` fit to show: the userinfo and every query value replaced.
pub(crate) fn redact_url(url: &str) -> String {
    let parts = UrlParts::of(url);
    let mut shown = url.to_owned();
    if let Some(query) = parts.query {
        shown.replace_range(
            parts.query_at..parts.query_at + query.len(),
            &redact_query(query),
        );
    }
    if let Some(userinfo) = parts.userinfo {
        shown.replace_range(
            parts.userinfo_at..parts.userinfo_at + userinfo.len(),
            REDACTED,
        );
    }
    shown
}

/// Where the userinfo and the query of a URL are, found by hand so that a URL the
/// HTTP client would reject is still redacted.
struct UrlParts<'a> {
    userinfo: Option<&'a str>,
    userinfo_at: usize,
    query: Option<&'a str>,
    query_at: usize,
}

impl<'a> UrlParts<'a> {
    fn of(url: &'a str) -> Self {
        let authority_at = url.find("://").map_or(0, |at| at + 3);
        let rest = &url[authority_at..];
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let userinfo = rest[..authority_len].rfind('@').map(|at| &rest[..at]);
        let after = authority_at + authority_len;
        let query_at = url[after..].find('?').map(|at| after + at + 1);
        let query = query_at.map(|at| {
            let query = &url[at..];
            &query[..query.find('#').unwrap_or(query.len())]
        });
        Self {
            userinfo,
            userinfo_at: authority_at,
            query,
            query_at: query_at.unwrap_or(0),
        }
    }
}

fn query_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
}

/// `a=1&b=2` as `a=<redacted>&b=<redacted>`: names stay, for telling what was set.
fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) => format!("{name}={REDACTED}"),
            None => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `%41` as `A`; invalid escapes stay as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, ..) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://alice:s3cr%40t-pw@api.example.com/v1?api_key=QKEY-1&v=2&sig=ab12&mode=long-enough-value";

    #[test]
    fn urls_show_without_userinfo_or_query_values() {
        assert_eq!(
            redact_url(URL),
            "https://<redacted>@api.example.com/v1?api_key=<redacted>&v=<redacted>&sig=<redacted>&mode=<redacted>"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(
            redact_url("http://host/v1?key=k#frag"),
            "http://host/v1?key=<redacted>#frag"
        );
        assert_eq!(redact_url("tok@host/v1"), "<redacted>@host/v1");
        assert_eq!(
            redact_url("http://host/a@b"),
            "http://host/a@b",
            "an @ in the path is no userinfo"
        );
    }

    #[test]
    fn scrub_removes_every_form_of_every_secret() {
        let redactor = Redactor::new(URL, Some("sk-live-0451"));
        for (text, expected) in [
            ("key sk-live-0451 refused", "key <redacted> refused"),
            ("user alice", "user <redacted>"),
            (
                "pw s3cr@t-pw and s3cr%40t-pw",
                "pw <redacted> and <redacted>",
            ),
            ("bad api_key=QKEY-1", "bad api_key=<redacted>"),
            (
                "sig ab12, value long-enough-value",
                "sig <redacted>, value <redacted>",
            ),
            ("version 2 stays", "version 2 stays"),
            (
                "error sending request for url (https://api.example.com/v1/chat/completions?api_key=QKEY-1&v=2&sig=ab12&mode=long-enough-value)",
                "error sending request for url (https://api.example.com/v1/chat/completions?api_key=<redacted>&v=<redacted>&sig=<redacted>&mode=<redacted>)",
            ),
        ] {
            assert_eq!(redactor.scrub(text.to_owned()), expected, "{text}");
        }
    }

    #[test]
    fn the_client_s_own_form_of_the_url_is_scrubbed_too() {
        // The URL parser writes a space in the query as `%20`.
        let redactor = Redactor::new("http://host/v1?token=two words", None);
        assert_eq!(
            redactor.scrub("for url (http://host/v1/chat/completions?token=two%20words)".into()),
            "for url (http://host/v1/chat/completions?token=<redacted>)"
        );
        assert_eq!(redactor.scrub("got two words".into()), "got <redacted>");
    }

    #[test]
    fn a_plain_url_and_no_key_change_nothing() {
        let redactor = Redactor::new("http://127.0.0.1:8080/v1", None);
        let text = "could not reach llama.cpp: connection refused";
        assert_eq!(redactor.scrub(text.to_owned()), text);
    }
}
