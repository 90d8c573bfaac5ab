//! The git kind: the documentation files of a repository's branch (Markdown,
//! MDX, reStructuredText, AsciiDoc, plain text), followed commit by commit.
//! The mirror, the fetch and the sync are [`crate::ingest::git`].

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ingest::git::{GitState, Remote};
use crate::ingest::IngestError;
use crate::sources::connector::{config_from, Connector, Field, KindInfo, Run, WebhookProof};
use crate::{Corpus, Result};

pub struct Git;

pub const KEY: &str = "git";

/// The files a git source takes when its configuration names none.
pub const DEFAULT_INCLUDE: &[&str] =
    &["**/*.md", "**/*.mdx", "**/*.markdown", "**/*.rst", "**/*.adoc", "**/*.asciidoc", "**/*.txt"];

/// Configuration of a git source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitConfig {
    /// `https://`, `http://`, `ssh://` or `git://` URL, or an absolute path
    /// on the server.
    pub url: String,
    /// `None`: the remote's default branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Glob patterns on the path in the repository; empty: [`DEFAULT_INCLUDE`].
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Where citations link: a template over `{branch}`, `{commit}` and
    /// `{path}`, ending in `#{anchor}` for links to the section, or a
    /// forge's preset (`github`, `gitlab`, `gitea`, `bitbucket`) for an
    /// `https://` remote. `None`: citations name the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_url: Option<String>,
    /// The environment variable holding an access token for an
    /// `https://` remote (never the token itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// A deploy key for an `ssh://` remote: the path of its private key file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_key_file: Option<String>,
    /// The environment variable holding the secret a forge's webhook
    /// proves (`POST /admin/sources/{id}/sync`); `None`: no webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret_env: Option<String>,
    /// The largest repository (its objects, as fetched) the source takes.
    #[serde(default = "default_max_repository_mb")]
    pub max_repository_mb: u32,
}

fn default_max_repository_mb() -> u32 {
    1024
}

/// Where the repository is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Url(url::Url),
    Path(PathBuf),
}

const INFO: KindInfo = KindInfo {
    needs: "url",
    note: Some(
        "Markdown, MDX, reStructuredText, AsciiDoc and text files of one branch; each re-sync reads only the \
         files changed since the commit it indexed. Citation links: a template over {branch}, {path} (and \
         #{anchor}), or github, gitlab, gitea, bitbucket.",
    ),
    fields: &[
        Field::text("url", "Repository").required().placeholder("https://github.com/acme/docs.git"),
        Field::text("branch", "Branch").placeholder("main"),
        Field::text("citation_url", "Citation links").placeholder("github"),
        Field::list("include", "Include files").placeholder("docs/**/*.md, docs/**/*.rst").advanced(),
        Field::list("exclude", "Exclude files").placeholder("**/CHANGELOG.md").advanced(),
        Field::text("token_env", "Token from environment variable").placeholder("LORE_GIT_TOKEN").advanced(),
        Field::text("deploy_key_file", "Deploy key file").placeholder("/etc/lore/deploy_key").advanced(),
        Field::text("webhook_secret_env", "Webhook secret from environment variable")
            .placeholder("LORE_DOCS_WEBHOOK_SECRET")
            .advanced(),
        Field::number("max_repository_mb", "Max repository size (MB)", 1).default("1024").advanced(),
    ],
    ..KindInfo::new(KEY, "Git repository (docs as files)").synced()
};

#[async_trait]
impl Connector for Git {
    type Config = GitConfig;

    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn parse(&self, given: Option<Value>) -> Result<GitConfig, IngestError> {
        let mut config: GitConfig = config_from(&INFO, given)?;
        // An optional field sent empty is not given.
        for optional in [
            &mut config.branch,
            &mut config.citation_url,
            &mut config.token_env,
            &mut config.deploy_key_file,
            &mut config.webhook_secret_env,
        ] {
            *optional =
                optional.take().map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        }
        config.url = config.url.trim().to_owned();
        config.validate()?;
        Ok(config)
    }

    /// The remote must be an address a crawl may reach, answer as a git
    /// repository with the credentials given, and have the branch.
    async fn check(&self, lore: &Corpus, config: &GitConfig) -> Result<()> {
        if let Location::Url(url) = config.location()? {
            crate::ingest::web::check_address(&url, lore.settings.ingest.allow_private_addresses).await?;
        }
        Remote::of(config)?.probe(config.branch.as_deref()).await?;
        Ok(())
    }

    async fn sync(&self, run: Run<'_>, config: &GitConfig) -> Result<()> {
        // Again at each sync: the name may resolve elsewhere by now.
        if let Location::Url(url) = config.location()? {
            let allow = run.indexer.lore.settings.ingest.allow_private_addresses;
            crate::ingest::web::check_address(&url, allow).await?;
        }
        crate::ingest::git::sync(run.indexer, run.source, config, run.progress, run.cancel).await
    }

    /// The secret is read from the environment at each call: unset or
    /// empty, no call is accepted. Compared in constant time.
    fn verifies_webhook(&self, config: &GitConfig, proof: &WebhookProof<'_>) -> bool {
        use hmac::Mac as _;
        use subtle::ConstantTimeEq as _;
        let Some(secret) = config.webhook_secret_env.as_deref().and_then(|name| std::env::var(name).ok())
        else {
            return false;
        };
        if secret.is_empty() {
            return false;
        }
        match proof {
            WebhookProof::Token(token) => bool::from(token.as_bytes().ct_eq(secret.as_bytes())),
            WebhookProof::Signature { hex, body } => {
                let Some(signature) = from_hex(hex) else { return false };
                let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()) else {
                    return false;
                };
                mac.update(body);
                mac.verify_slice(&signature).is_ok()
            }
        }
    }

    fn state_summary(&self, state: &Value) -> Option<String> {
        let state: GitState = serde_json::from_value(state.clone()).ok()?;
        let short: String = state.commit.chars().take(12).collect();
        let what = match state.compared.as_str() {
            "unchanged" => "nothing changed".to_owned(),
            "full" => format!("all {} files compared", state.changed),
            _ => format!("{} files changed, {} removed", state.changed, state.removed),
        };
        Some(format!("Commit {short} of {}: {what} by the last sync", state.branch))
    }
}

impl GitConfig {
    /// Checks the configuration's shape (no I/O).
    pub fn validate(&self) -> Result<(), IngestError> {
        self.location()?;
        if let Some(branch) = &self.branch {
            let bad = branch.is_empty()
                || branch.starts_with(['-', '/'])
                || branch.ends_with(['/', '.'])
                || branch.contains("..")
                || branch.contains("@{")
                || branch.chars().any(|c| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c));
            if bad {
                return Err(invalid(format!("branch {branch:?} is not a branch name")));
            }
        }
        self.rules()?;
        for (key, name) in [("token_env", &self.token_env), ("webhook_secret_env", &self.webhook_secret_env)]
        {
            let Some(name) = name else { continue };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(invalid(format!(
                    "{key} names an environment variable (letters, digits, _), not {name:?}"
                )));
            }
        }
        if let Some(path) = &self.deploy_key_file {
            if !path.starts_with('/') || path.contains(['\'', '"', '\n']) {
                return Err(invalid("deploy_key_file must be an absolute path without quotes".into()));
            }
        }
        if self.max_repository_mb == 0 || self.max_repository_mb > 100_000 {
            return Err(invalid("max_repository_mb must be between 1 and 100000".into()));
        }
        // The placeholders and presets are checked by building them.
        self.citations("main", "0000000")?;
        Ok(())
    }

    /// Where the repository is: a URL of a transport a source may use, or
    /// an absolute path. A URL carrying a password is refused: the token
    /// belongs in the environment.
    pub fn location(&self) -> Result<Location, IngestError> {
        let raw = self.url.trim();
        if raw.starts_with('/') {
            return Ok(Location::Path(PathBuf::from(raw)));
        }
        let url = url::Url::parse(raw).map_err(|err| invalid(format!("url {raw:?}: {err}")))?;
        match url.scheme() {
            "https" | "http" | "ssh" | "git" if url.host_str().is_some() => {}
            "file" => return Ok(Location::Path(PathBuf::from(url.path()))),
            _ => {
                return Err(invalid(
                    "url must be an https://, http://, ssh:// or git:// URL with a host, or an absolute path"
                        .into(),
                ))
            }
        }
        if url.password().is_some() {
            return Err(invalid(
                "the url carries a password: put the token in an environment variable and name it in token_env"
                    .into(),
            ));
        }
        Ok(Location::Url(url))
    }

    /// Which paths of the tree the source takes.
    pub fn rules(&self) -> Result<PathRules, IngestError> {
        let set = |patterns: &[String]| {
            let mut builder = globset::GlobSetBuilder::new();
            for pattern in patterns {
                let glob = globset::GlobBuilder::new(pattern)
                    .literal_separator(true)
                    .build()
                    .map_err(|err| invalid(format!("pattern {pattern:?}: {err}")))?;
                builder.add(glob);
            }
            builder.build().map_err(|err| invalid(err.to_string()))
        };
        let include = if self.include.is_empty() {
            set(&DEFAULT_INCLUDE.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())?
        } else {
            set(&self.include)?
        };
        Ok(PathRules { include, exclude: set(&self.exclude)? })
    }

    /// Citation links for the files of `commit` on `branch`.
    pub fn citations(&self, branch: &str, commit: &str) -> Result<Citations, IngestError> {
        let Some(given) = self.citation_url.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(Citations { template: None, anchors: false });
        };
        let template = match given {
            "github" | "gitlab" | "gitea" | "bitbucket" => {
                let base = match self.location()? {
                    Location::Url(url) if url.scheme() == "https" => {
                        url.as_str().trim_end_matches('/').trim_end_matches(".git").to_owned()
                    }
                    _ => return Err(invalid(format!("the {given} preset needs an https:// repository URL"))),
                };
                match given {
                    "github" => format!("{base}/blob/{{branch}}/{{path}}#{{anchor}}"),
                    "gitlab" => format!("{base}/-/blob/{{branch}}/{{path}}#{{anchor}}"),
                    "gitea" => format!("{base}/src/branch/{{branch}}/{{path}}#{{anchor}}"),
                    // Bitbucket prefixes its heading ids; a link to the file.
                    _ => format!("{base}/src/{{branch}}/{{path}}"),
                }
            }
            template => template.to_owned(),
        };
        let (page, anchors) = match template.strip_suffix("#{anchor}") {
            Some(page) => (page.to_owned(), true),
            None => (template.clone(), false),
        };
        if !page.contains("{path}") || page.contains("{anchor}") {
            return Err(invalid(
                "citation_url needs {path}, and may end in #{anchor} (or be github, gitlab, gitea, bitbucket)"
                    .into(),
            ));
        }
        let filled = page.replace("{branch}", branch).replace("{commit}", commit);
        url::Url::parse(&filled.replace("{path}", "x"))
            .map_err(|err| invalid(format!("citation_url {template:?}: {err}")))?;
        Ok(Citations { template: Some(filled), anchors })
    }
}

/// Hex → bytes (`None` for anything else).
fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok()).collect()
}

fn invalid(message: String) -> IngestError {
    IngestError::InvalidSource(message)
}

/// The include and exclude patterns of a git source.
pub struct PathRules {
    include: globset::GlobSet,
    exclude: globset::GlobSet,
}

impl PathRules {
    pub fn takes(&self, path: &str) -> bool {
        self.include.is_match(path) && !self.exclude.is_match(path)
    }
}

/// How the files of one commit are cited.
pub struct Citations {
    /// The link with `{path}` still to fill.
    template: Option<String>,
    /// Whether each section's chunks link to its heading's anchor.
    pub anchors: bool,
}

impl Citations {
    /// The link to the file at `path` (each segment percent-encoded).
    pub fn url(&self, path: &str) -> Option<String> {
        let template = self.template.as_ref()?;
        let encoded: Vec<String> = path
            .split('/')
            .map(|segment| url::form_urlencoded::byte_serialize(segment.as_bytes()).collect::<String>())
            .map(|segment| segment.replace('+', "%20"))
            .collect();
        Some(template.replace("{path}", &encoded.join("/")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(config: Value) -> Result<GitConfig, IngestError> {
        Git.parse(Some(config))
    }

    #[test]
    fn a_git_configuration_is_checked_before_anything_is_stored() {
        let ok = parsed(json!({"url": "https://github.com/acme/docs.git"})).unwrap();
        assert_eq!(ok.max_repository_mb, 1024);
        assert!(parsed(json!({"url": "/srv/docs"})).is_ok());
        for (config, says) in [
            (json!({"url": "ext::sh -c touch% /tmp/pwned"}), "url"),
            (json!({"url": "ftp://host/repo"}), "https://"),
            (json!({"url": "docs"}), "url"),
            (json!({"url": "https://me:secret@github.com/acme/docs.git"}), "token_env"),
            (json!({"url": "/srv/docs", "branch": "-upload-pack"}), "branch"),
            (json!({"url": "/srv/docs", "branch": "a..b"}), "branch"),
            (json!({"url": "/srv/docs", "include": ["[oops"]}), "pattern"),
            (json!({"url": "/srv/docs", "token_env": "ghp_abc-123"}), "token_env"),
            (json!({"url": "/srv/docs", "deploy_key_file": "key"}), "deploy_key_file"),
            (json!({"url": "/srv/docs", "citation_url": "github"}), "https://"),
            (json!({"url": "/srv/docs", "citation_url": "https://h/{branch}/file"}), "{path}"),
            (json!({"url": "/srv/docs", "citation_url": "https://h/{path}#x{anchor}"}), "{path}"),
            (json!({"url": "/srv/docs", "max_repository_mb": 0}), "max_repository_mb"),
        ] {
            let refused = parsed(config.clone()).err().unwrap_or_else(|| panic!("{config} was taken"));
            assert!(matches!(refused, IngestError::InvalidSource(_)), "{refused:?}");
            assert!(refused.to_string().contains(says), "{config}: {refused}");
        }
    }

    #[test]
    fn citations_fill_the_template_or_the_forge_s_preset() {
        let config = |citation: &str| {
            parsed(json!({"url": "https://github.com/acme/docs.git", "citation_url": citation})).unwrap()
        };
        let github = config("github").citations("main", "abc").unwrap();
        assert!(github.anchors);
        assert_eq!(
            github.url("guides/Get started.md").as_deref(),
            Some("https://github.com/acme/docs/blob/main/guides/Get%20started.md")
        );
        let gitlab = config("gitlab").citations("dev", "abc").unwrap();
        assert_eq!(gitlab.url("a.rst").as_deref(), Some("https://github.com/acme/docs/-/blob/dev/a.rst"));
        let pinned =
            config("https://docs.acme.test/src/{commit}/{path}").citations("main", "abc123").unwrap();
        assert!(!pinned.anchors);
        assert_eq!(pinned.url("x/y.adoc").as_deref(), Some("https://docs.acme.test/src/abc123/x/y.adoc"));
        let none = parsed(json!({"url": "/srv/docs"})).unwrap().citations("main", "abc").unwrap();
        assert_eq!(none.url("a.md"), None);
    }

    #[test]
    fn a_webhook_proves_the_secret_by_signature_or_token_and_nothing_else_passes() {
        use hmac::Mac as _;
        let config =
            parsed(json!({"url": "/srv/docs", "webhook_secret_env": "LORE_TEST_GIT_HOOK_SECRET"})).unwrap();
        let body = br#"{"ref":"refs/heads/main"}"#;
        let sign = |secret: &[u8]| {
            let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
            mac.update(body);
            mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        let right = sign(b"s3cret");
        // Unset, nothing passes.
        assert!(!Git.verifies_webhook(&config, &WebhookProof::Token("s3cret")));
        std::env::set_var("LORE_TEST_GIT_HOOK_SECRET", "s3cret");
        assert!(Git.verifies_webhook(&config, &WebhookProof::Token("s3cret")));
        assert!(Git.verifies_webhook(&config, &WebhookProof::Signature { hex: &right, body }));
        for wrong in [
            WebhookProof::Token("s3cre"),
            WebhookProof::Token(""),
            WebhookProof::Signature { hex: &sign(b"other"), body },
            WebhookProof::Signature { hex: &right, body: b"{}" },
            WebhookProof::Signature { hex: "zz", body },
        ] {
            assert!(!Git.verifies_webhook(&config, &wrong), "{wrong:?}");
        }
        let without = parsed(json!({"url": "/srv/docs"})).unwrap();
        assert!(!Git.verifies_webhook(&without, &WebhookProof::Token("s3cret")));
    }

    #[test]
    fn the_default_rules_take_documentation_files_anywhere_and_the_exclusions_win() {
        let rules =
            parsed(json!({"url": "/srv/docs", "exclude": ["**/CHANGELOG.md"]})).unwrap().rules().unwrap();
        for taken in ["README.md", "docs/guide/install.mdx", "manual/index.rst", "book/ch1.adoc", "notes.txt"]
        {
            assert!(rules.takes(taken), "{taken}");
        }
        for skipped in ["src/main.rs", "logo.png", "docs/CHANGELOG.md", "CHANGELOG.md"] {
            assert!(!rules.takes(skipped), "{skipped}");
        }
        let only = parsed(json!({"url": "/srv/docs", "include": ["docs/**/*.md"]})).unwrap().rules().unwrap();
        assert!(only.takes("docs/a/b.md") && only.takes("docs/b.md") && !only.takes("README.md"));
    }
}
