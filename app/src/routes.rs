//! The admin API's routes, named once. The server's router registers each
//! [`Route`]'s pattern and the console builds each URL from the same
//! constant, so a path changed on one side changes on the other, and a
//! route the console calls with the wrong number of parameters does not
//! compile.

/// An admin API route: an axum path pattern with `N` parameters
/// (`{name}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route<const N: usize>(&'static str);

impl<const N: usize> Route<N> {
    /// The pattern, as the router takes it.
    pub const fn pattern(self) -> &'static str {
        self.0
    }

    /// The URL with each parameter filled, in order, percent-encoded.
    pub fn at(self, values: [&str; N]) -> String {
        let mut url = String::with_capacity(self.0.len());
        let mut rest = self.0;
        let mut values = values.iter();
        while let Some(open) = rest.find('{') {
            url.push_str(&rest[..open]);
            let close = rest[open..].find('}').map_or(rest.len(), |at| open + at + 1);
            if let Some(value) = values.next() {
                encode_segment(value, &mut url);
            }
            rest = &rest[close..];
        }
        url.push_str(rest);
        url
    }
}

impl Route<0> {
    /// The URL of a route without parameters.
    pub const fn url(self) -> &'static str {
        self.0
    }
}

/// Appends `value` as one path segment: every byte but the unreserved
/// ones (RFC 3986) percent-encoded.
fn encode_segment(value: &str, url: &mut String) {
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
}

// Readiness and the Dashboard.
pub const SETUP_STATE: Route<0> = Route("/admin/setup-state/");
pub const OBSERVABILITY: Route<0> = Route("/admin/observability/");

// The setup wizard.
pub const SETUP: Route<0> = Route("/admin/setup/");
pub const SETUP_PERSONA: Route<0> = Route("/admin/setup/persona");
pub const SETUP_SOURCE: Route<0> = Route("/admin/setup/source");
pub const SETUP_PROVIDER: Route<0> = Route("/admin/setup/provider");
pub const SETUP_INDEX: Route<0> = Route("/admin/setup/index");
pub const SETUP_ASK: Route<0> = Route("/admin/setup/ask");
pub const SETUP_NEXT: Route<0> = Route("/admin/setup/next");
pub const SETUP_BACK: Route<0> = Route("/admin/setup/back");

// Sources, runs and search.
pub const SOURCES: Route<0> = Route("/admin/sources/");
pub const SOURCE_KINDS: Route<0> = Route("/admin/sources/kinds");
pub const SOURCE: Route<1> = Route("/admin/sources/{id}");
pub const SOURCE_ENABLE: Route<1> = Route("/admin/sources/{id}/enable");
pub const SOURCE_DISABLE: Route<1> = Route("/admin/sources/{id}/disable");
pub const SOURCE_SYNC: Route<1> = Route("/admin/sources/{id}/sync");
pub const SOURCE_FILES: Route<1> = Route("/admin/sources/{id}/files");
pub const SOURCE_DOCUMENTS: Route<1> = Route("/admin/sources/{id}/documents");
pub const SOURCE_VOLATILITY: Route<1> = Route("/admin/sources/{id}/volatility");
pub const SOURCE_AUDIENCE: Route<1> = Route("/admin/sources/{id}/audience");
pub const JOB: Route<1> = Route("/admin/jobs/{id}");
pub const REINDEX: Route<0> = Route("/admin/reindex");
pub const VECTOR_INDEX: Route<0> = Route("/admin/index");
pub const SEARCH: Route<0> = Route("/admin/search");
pub const TUNING: Route<0> = Route("/admin/tuning");
pub const TUNING_CHUNKING: Route<0> = Route("/admin/tuning/chunking");

// Providers, targets and role bindings.
pub const PROVIDERS: Route<0> = Route("/admin/providers/");
pub const QUICK_ADD: Route<0> = Route("/admin/providers/quick-add");
pub const ACCOUNTS: Route<0> = Route("/admin/providers/accounts");
pub const ACCOUNT: Route<1> = Route("/admin/providers/accounts/{id}");
pub const ACCOUNT_MODELS: Route<1> = Route("/admin/providers/accounts/{id}/models");
pub const TARGETS: Route<0> = Route("/admin/targets");
pub const TARGET: Route<1> = Route("/admin/targets/{id}");
pub const TARGET_PROBE: Route<1> = Route("/admin/targets/{id}/probe");
pub const TARGET_PROBES: Route<1> = Route("/admin/targets/{id}/probes");
pub const ESCALATION_TIERS: Route<0> = Route("/admin/providers/escalation-tiers");
pub const ROLE: Route<1> = Route("/admin/roles/{role}");

// Access keys.
pub const KEYS: Route<0> = Route("/admin/keys");
pub const KEY_REVOKE: Route<1> = Route("/admin/keys/{id}/revoke");

// Assistants signed in over OAuth: their live grants.
pub const OAUTH_CONNECTIONS: Route<0> = Route("/admin/oauth/connections");
pub const OAUTH_CONNECTION_REVOKE: Route<1> = Route("/admin/oauth/connections/{id}/revoke");

// The profile: persona, versions, evals, golden questions and pins.
pub const PROFILE: Route<0> = Route("/admin/profile");
pub const PROFILE_PERSONA: Route<0> = Route("/admin/profile/persona");
pub const PROFILE_RENDER: Route<0> = Route("/admin/profile/render");
pub const PROFILE_VERSIONS: Route<0> = Route("/admin/profile/versions");
pub const PROFILE_VERSION: Route<1> = Route("/admin/profile/versions/{version}");
pub const PROFILE_RESTORE: Route<1> = Route("/admin/profile/versions/{version}/restore");
pub const PROFILE_EVALS: Route<0> = Route("/admin/profile/evals");
pub const PROFILE_JUDGING: Route<0> = Route("/admin/profile/judging");
pub const GOLDEN: Route<0> = Route("/admin/golden");
pub const GOLDEN_ONE: Route<1> = Route("/admin/golden/{id}");
pub const PINS: Route<0> = Route("/admin/pins");
pub const PIN: Route<1> = Route("/admin/pins/{id}");

// The Playground.
pub const PLAYGROUND_ANSWER: Route<0> = Route("/admin/playground/answer");
pub const PLAYGROUND_RETRIEVAL: Route<0> = Route("/admin/playground/retrieval");
pub const PLAYGROUND_FEEDBACK: Route<0> = Route("/admin/playground/feedback");

// Ratings of answers: the review queue and what is done about an item.
pub const FEEDBACK: Route<0> = Route("/admin/feedback");
pub const FEEDBACK_REVIEW: Route<1> = Route("/admin/feedback/{trace_id}/review");
