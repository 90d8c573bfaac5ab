//! The website kind: pages found from a site's sitemap or by following its
//! links, re-synced on a schedule. The crawler itself is
//! [`crate::ingest::web`].

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ingest::IngestError;
use crate::sources::connector::{config_from, Connector, Field, KindInfo, Run};
use crate::{Corpus, Result};

pub struct Website;

pub const KEY: &str = "website";

/// How a website source finds its pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discovery {
    /// The site's sitemap (from robots.txt, else `/sitemap.xml`), falling back
    /// to a crawl when there is none.
    #[default]
    Sitemap,
    /// Follow links from the start URL.
    Crawl,
}

/// Configuration of a website source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebsiteConfig {
    pub start_url: String,
    #[serde(default)]
    pub discovery: Discovery,
    /// An explicit sitemap URL (otherwise robots.txt, then `/sitemap.xml`).
    #[serde(default)]
    pub sitemap_url: Option<String>,
    /// Glob patterns on the URL path (`/docs/**`); empty: everything in scope.
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default = "default_max_pages")]
    pub max_pages: usize,
    #[serde(default = "default_max_depth")]
    pub max_depth: usize,
}

fn default_max_pages() -> usize {
    500
}

fn default_max_depth() -> usize {
    5
}

const INFO: KindInfo = KindInfo {
    needs: "start_url",
    fields: &[
        Field::url("start_url", "Start URL").required().placeholder("https://docs.example.com/"),
        Field::choice(
            "discovery",
            "Find pages by",
            &[("sitemap", "Sitemap (falls back to crawling)"), ("crawl", "Following links")],
        ),
        Field::list("include", "Include paths").placeholder("/docs/**").advanced(),
        Field::list("exclude", "Exclude paths").placeholder("/blog/**, /changelog/*").advanced(),
        Field::number("max_pages", "Max pages", 1).default("500").advanced(),
        Field::number("max_depth", "Max depth", 0).default("5").advanced(),
    ],
    ..KindInfo::new(KEY, "Website (sitemap or crawl)").synced()
};

#[async_trait]
impl Connector for Website {
    type Config = WebsiteConfig;

    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn parse(&self, given: Option<Value>) -> Result<WebsiteConfig, IngestError> {
        let config = config_from(&INFO, given)?;
        validate(&config)?;
        Ok(config)
    }

    /// Refuses a private target now rather than at the first run. (A name
    /// that does not resolve yet is the run's problem.)
    async fn check(&self, lore: &Corpus, config: &WebsiteConfig) -> Result<()> {
        if let Ok(start) = url::Url::parse(&config.start_url) {
            let allow = lore.settings.ingest.allow_private_addresses;
            if let Err(refused @ IngestError::PrivateAddress(_)) =
                crate::ingest::web::check_address(&start, allow).await
            {
                return Err(refused.into());
            }
        }
        Ok(())
    }

    async fn sync(&self, run: Run<'_>, config: &WebsiteConfig) -> Result<()> {
        crate::ingest::web::sync(run.indexer, run.source, config, run.progress, run.cancel).await
    }
}

/// Checks a website configuration's URLs, patterns and limits (on creation,
/// and again before each run of a stored one).
pub fn validate(config: &WebsiteConfig) -> Result<(), IngestError> {
    let url = url::Url::parse(&config.start_url)
        .map_err(|err| IngestError::InvalidSource(format!("start_url {:?}: {err}", config.start_url)))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(IngestError::InvalidSource("start_url must be an http(s) URL with a host".into()));
    }
    if let Some(sitemap) = &config.sitemap_url {
        url::Url::parse(sitemap)
            .map_err(|err| IngestError::InvalidSource(format!("sitemap_url {sitemap:?}: {err}")))?;
    }
    for pattern in config.include.iter().chain(&config.exclude) {
        globset::Glob::new(pattern)
            .map_err(|err| IngestError::InvalidSource(format!("pattern {pattern:?}: {err}")))?;
    }
    if config.max_pages == 0 || config.max_pages > 100_000 {
        return Err(IngestError::InvalidSource("max_pages must be between 1 and 100000".into()));
    }
    if config.max_depth > 50 {
        return Err(IngestError::InvalidSource("max_depth must be at most 50".into()));
    }
    Ok(())
}
